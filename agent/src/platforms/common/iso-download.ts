/**
 * `fetchiso` on the real platforms: the agent downloads the image itself, so every platform reports the
 * same event fields (`filename`, `percent_done`, `download_rate`) while it runs. `http://` through
 * Node's fetch, `ftp://` through basic-ftp (a maintained pure-JS client; Node has none), `file://` from
 * a local path. The bytes are streamed into a hidden temporary name in the ISO directory, counted
 * against a cap, and renamed to the final name only when complete; a failed or killed download
 * leaves nothing behind.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Client as FtpClient } from 'basic-ftp';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { WorkPlan } from '../../jobs/queued-actions.ts';
import type { JobContext, JobOutcome } from '../../jobs/types.ts';
import { conflict } from '../ports/vm.ts';

/** Largest image accepted unless the platform says otherwise (a DVD image of today is under 10 GiB). */
export const DEFAULT_ISO_CAP_BYTES = 16 * 1024 ** 3;

/** The file name an URL's last path segment gives, checked as `renameiso` checks ISO names. */
export function isoFileName(url: string): string {
  const path = new URL(url).pathname;
  let last = path.slice(path.lastIndexOf('/') + 1);
  try {
    last = decodeURIComponent(last);
  } catch {
    last = '';
  }
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.:@+-]*$/.test(last) || last.includes('..') || last.length > 255) {
    throw new HostadmError('BAD_REQUEST', 'url: must end in a file name (letters, digits and . _ : @ + -)', {
      fieldErrors: [{ field: 'url', message: 'must end in a file name' }],
    });
  }
  return last;
}

export interface IsoDownloadOptions {
  /** Where finished images go (created beforehand by the platform). */
  isoDir: string;
  maxBytes?: number;
  /** Lines shown as the job's commands (`cmd_list`). */
  commands?: readonly string[];
}

/** Refuses a name already in the store (409) and plans the download. */
export async function planIsoDownload(url: string, options: IsoDownloadOptions): Promise<WorkPlan> {
  const filename = isoFileName(url);
  const target = join(options.isoDir, filename);
  if (await exists(target)) throw conflict('url', `an ISO named ${filename} already exists`);
  const maxBytes = options.maxBytes ?? DEFAULT_ISO_CAP_BYTES;
  return {
    commands: options.commands ?? [`fetch ${url}`],
    fields: { filename },
    work: (ctx) => download(ctx, url, target, maxBytes),
  };
}

async function download(ctx: JobContext, url: string, target: string, maxBytes: number): Promise<JobOutcome> {
  const name = basename(target);
  const temp = join(dirname(target), `.${name}.part-${randomBytes(6).toString('hex')}`);
  const meter = new Meter(ctx, maxBytes);
  ctx.progress(0);
  ctx.report({ download_rate: '0 B/s' });
  const file = createWriteStream(temp, { flags: 'wx', mode: 0o644 });
  const sink = meter.counting(file);
  // Failures reach the job through the transfer's promise. The streams' own error events must not
  // escape as exceptions: the file's when the transfer fails before writing (an HTTP error), the
  // sink's when a client ends it after the transfer failed (a missing FTP file).
  file.on('error', () => {});
  sink.on('error', () => {});
  try {
    const scheme = new URL(url).protocol;
    if (scheme === 'file:') await fromFile(url, sink, meter, ctx.signal);
    else if (scheme === 'http:') await fromHttp(url, sink, meter, ctx.signal);
    else if (scheme === 'ftp:') await fromFtp(url, sink, meter, ctx.signal);
    else throw new Error(`unsupported scheme ${scheme}`);
    // A name taken while the download ran (another fetch, a rename) is not overwritten.
    if (await exists(target)) throw new Error(`${name} appeared while downloading; not overwritten`);
    await rename(temp, target);
    meter.finish();
    ctx.log(`${name}: ${meter.bytes} bytes\n`);
    return { success: true };
  } catch (err) {
    // The file opens asynchronously: removed once its stream has closed, or a late open would leave it behind.
    sink.destroy();
    if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
    await rm(temp, { force: true });
    const reason = ctx.signal.aborted ? 'killed' : err instanceof Error ? err.message : String(err);
    ctx.log(`${reason}\n`);
    return { success: false, reason };
  }
}

async function fromFile(url: string, sink: Writable, meter: Meter, signal: AbortSignal): Promise<void> {
  const path = fileURLToPath(url);
  const info = await stat(path);
  if (!info.isFile()) throw new Error(`${path} is not a regular file`);
  meter.expect(info.size);
  await pipeline(createReadStream(path), sink, { signal });
}

async function fromHttp(url: string, sink: Writable, meter: Meter, signal: AbortSignal): Promise<void> {
  const response = await fetch(url, { signal, redirect: 'follow' });
  if (!response.ok || !response.body) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  const length = Number(response.headers.get('content-length'));
  if (Number.isFinite(length) && length > 0) meter.expect(length);
  await pipeline(Readable.fromWeb(response.body), sink, { signal });
}

async function fromFtp(url: string, sink: Writable, meter: Meter, signal: AbortSignal): Promise<void> {
  const parsed = new URL(url);
  const client = new FtpClient(60_000);
  const onAbort = () => client.close();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await client.access({
      host: parsed.hostname,
      port: parsed.port ? Number(parsed.port) : 21,
      user: parsed.username ? decodeURIComponent(parsed.username) : 'anonymous',
      password: parsed.password ? decodeURIComponent(parsed.password) : 'anonymous@',
    });
    const path = decodeURIComponent(parsed.pathname);
    const size = await client.size(path).catch(() => 0);
    if (size > 0) meter.expect(size);
    await client.downloadTo(sink, path);
  } finally {
    signal.removeEventListener('abort', onAbort);
    client.close();
  }
}

/** Counts bytes, enforces the cap, and reports percent and rate. */
class Meter {
  bytes = 0;
  private total = 0;
  private readonly started = Date.now();
  private readonly ctx: JobContext;
  private readonly maxBytes: number;

  constructor(ctx: JobContext, maxBytes: number) {
    this.ctx = ctx;
    this.maxBytes = maxBytes;
  }

  expect(total: number): void {
    if (total > this.maxBytes) throw new Error(`the image is ${total} bytes, more than the cap of ${this.maxBytes}`);
    this.total = total;
  }

  counting(out: Writable): Writable {
    const counter = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.bytes += chunk.length;
        if (this.bytes > this.maxBytes) return done(new Error(`the download passed the cap of ${this.maxBytes} bytes`));
        this.report();
        if (!out.write(chunk)) out.once('drain', () => done());
        else done();
      },
      final: (done) => {
        out.end((err?: Error | null) => done(err ?? null));
      },
      destroy: (err, done) => {
        out.destroy();
        done(err);
      },
    });
    out.on('error', (err) => counter.destroy(err));
    return counter;
  }

  finish(): void {
    this.report();
    this.ctx.progress(100);
  }

  private report(): void {
    if (this.total > 0) this.ctx.progress(Math.min(99, (this.bytes / this.total) * 100));
    const seconds = Math.max((Date.now() - this.started) / 1000, 0.001);
    this.ctx.report({ download_rate: formatRate(this.bytes / seconds) });
  }
}

/** Bytes per second as fetch(1) and curl show it: `850 B/s`, `12.3 kB/s`, `4.1 MB/s`. */
export function formatRate(perSecond: number): string {
  const units = ['B/s', 'kB/s', 'MB/s', 'GB/s'];
  let value = perSecond;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
