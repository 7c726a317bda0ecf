/** A job's log, capped in bytes: past the cap, output is counted but not kept, and the cap is reported. */
export class JobLog {
  private text = '';
  private bytes = 0;
  private unsent = '';
  truncated = false;
  readonly capBytes: number;

  constructor(capBytes: number, initial = '') {
    this.capBytes = capBytes;
    if (initial) this.append(initial);
    this.unsent = '';
  }

  append(chunk: string): void {
    if (this.truncated) return;
    const size = Buffer.byteLength(chunk);
    if (this.bytes + size <= this.capBytes) {
      this.text += chunk;
      this.unsent += chunk;
      this.bytes += size;
      return;
    }
    // Keep what fits (whole characters only), then a marker saying where and why the log stops.
    const room = this.capBytes - this.bytes;
    const head = Buffer.from(chunk)
      .subarray(0, room)
      .toString('utf8')
      .replace(/\uFFFD$/, '');
    const marker = `\n[log truncated: cap of ${this.capBytes} bytes reached]\n`;
    this.text += head + marker;
    this.unsent += head + marker;
    this.bytes = this.capBytes;
    this.truncated = true;
  }

  get value(): string {
    return this.text;
  }

  /** Output added since the last call (for progress events). */
  takeUnsent(): string {
    const out = this.unsent;
    this.unsent = '';
    return out;
  }
}
