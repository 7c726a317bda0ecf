/**
 * Boot-environment listings as bectl(8), beadm(1) and zectl print them, in the spec's record shape.
 * With `-H` a row is tab-separated (`default\tNR\t/\t2.03G\t2025-08-05 16:53`); without it, columns are
 * padded with spaces under a `BE  Active Mountpoint  Space Created` header. The creation stamp becomes
 * `date` (`YYYY-MM-DD`) and its time of day `nick`, the time-like string the spec shows there (neither
 * tool has nicknames). A tool that prints no size (zectl) gets `-`. Indented rows (`list -s` datasets
 * and snapshots) are not environments; the listing ends at its first empty line after a row, as the
 * original's parser did.
 */
import type { BootEnvironment } from '../ports/beadm.ts';

const HEADER = /^(BE|BE\/Dataset\/Snapshot|Name)\s+Active\b/i;
const STAMP = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}:\d{2}(?::\d{2})?))?/;

export interface BeColumns {
  /** Whether the tool prints a Space column between Mountpoint and Created (bectl, beadm) or not (zectl). */
  space: boolean;
}

function splitRow(line: string, columns: BeColumns): string[] {
  if (line.includes('\t')) return line.split('\t').map((f) => f.trim());
  // Padded columns: the stamp is the last one or two words.
  const words = line.trim().split(/\s+/);
  const fixed = columns.space ? 4 : 3;
  return [...words.slice(0, fixed), words.slice(fixed).join(' ')];
}

function stamp(created: string | undefined): { date: string; nick: string } {
  const m = STAMP.exec(created?.trim() ?? '');
  if (!m) return { date: created?.trim() || '-', nick: '-' };
  return { date: m[1] ?? '-', nick: m[2] ?? '-' };
}

export function parseBeList(text: string, columns: BeColumns = { space: true }): Record<string, BootEnvironment> {
  const out: Record<string, BootEnvironment> = {};
  let seenRow = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') {
      if (seenRow) break;
      continue;
    }
    if (HEADER.test(line.trim()) || /^\s/.test(line) || /^-+(\s+-+)*\s*$/.test(line.trim())) continue;
    const fields = splitRow(line, columns);
    const [name, active, mount] = fields;
    if (!name || !active) continue;
    const space = columns.space ? fields[3] : '-';
    const created = columns.space ? fields[4] : fields[3];
    out[name] = { active: active || '-', mount: mount || '-', space: space || '-', ...stamp(created) };
    seenRow = true;
  }
  return out;
}
