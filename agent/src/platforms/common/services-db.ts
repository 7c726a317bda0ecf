/**
 * The services database (`/etc/services`, services(5)), the same format on FreeBSD and Linux:
 * `name port/protocol [aliases...] [# comment]`. Only tcp and udp entries count (the firewall
 * opens nothing else); the description is the comment's text. An entry without a comment takes
 * the one of the entry just before it with the same name, as the original did for the udp twin of
 * a tcp line.
 */
import type { KnownPort } from '../ports/firewall.ts';

const ENTRY = /^([^\s#]+)\s+([1-9]\d{0,4})\/(tcp|udp)\b([^#]*)(?:#(.*))?$/;

export function parseServicesDb(text: string): KnownPort[] {
  const out: KnownPort[] = [];
  for (const raw of text.split('\n')) {
    const match = ENTRY.exec(raw.trim());
    if (!match) continue;
    const [, name = '', number = '', protocol = ''] = match;
    if (Number(number) > 65535) continue;
    let description = (match[5] ?? '').trim();
    const previous = out.at(-1);
    if (description === '' && previous?.name === name) description = previous.description;
    out.push({ port: `${number}/${protocol}`, name, description });
  }
  return out;
}
