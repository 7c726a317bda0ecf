/** Peer addresses: which are this machine's own (loopback is never blacklisted when so configured). */
export function isLoopback(address: string): boolean {
  const a = address.replace(/^::ffff:/i, '');
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a) || a === '::1';
}

/** How many sockets each address holds open (the per-address cap); an address at zero is forgotten. */
export class AddressCounts {
  private readonly open = new Map<string, number>();

  count(address: string): number {
    return this.open.get(address) ?? 0;
  }

  add(address: string): void {
    this.open.set(address, this.count(address) + 1);
  }

  remove(address: string): void {
    const left = this.count(address) - 1;
    if (left > 0) this.open.set(address, left);
    else this.open.delete(address);
  }
}
