/** Peer addresses: which are this machine's own (loopback is never blacklisted when so configured). */
export function isLoopback(address: string): boolean {
  const a = address.replace(/^::ffff:/i, '');
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a) || a === '::1';
}
