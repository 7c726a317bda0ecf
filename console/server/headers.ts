/**
 * The HTTP headers the console is served with, one source for every server: the Node bridge and the
 * agent (assets.ts) and the Workers bridge (the `_headers` file the build writes from this module).
 *
 * The policy allows nothing but this origin: scripts and styles only from files (no inline script,
 * no eval), connections only back to the server that served the page (its /relay, or the agent's
 * WebSocket), no framing, no plugins, no form posts. Hashed files under assets/ never change, so
 * browsers may keep them for a year; index.html is revalidated every time so a new build is seen at once.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=()',
};

export const IMMUTABLE = 'public, max-age=31536000, immutable';
export const REVALIDATE = 'no-cache';

/** Hashed build output (`assets/name-<hash>.js`) is immutable; everything else is revalidated. */
export function cacheControlFor(path: string): string {
  return path.startsWith('/assets/') ? IMMUTABLE : REVALIDATE;
}

/** The Workers static-assets `_headers` file with the same rules. */
export function workersHeadersFile(): string {
  const security = Object.entries(SECURITY_HEADERS).map(([k, v]) => `  ${k}: ${v}`);
  return ['/*', ...security, `  Cache-Control: ${REVALIDATE}`, '/assets/*', '  ! Cache-Control', `  Cache-Control: ${IMMUTABLE}`, ''].join('\n');
}
