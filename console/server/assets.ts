/**
 * The built console (console/dist) served by the Node bridge and the agent, as a fetch-style handler
 * placed before their own routes: `GET`/`HEAD` of `/`, `/index.html` and the files under `/assets/`.
 * Anything else is not ours (undefined), so `/relay`, `/admin/...` and `/rpc/...` reach the app as before.
 *
 * Files are read once at start with their brotli and gzip forms: the console build writes those beside
 * each file (`<file>.br`, `<file>.gz`, kept out of the Workers upload by dist/.assetsignore), so a
 * bridge or agent start reads them rather than spending about half a second of CPU compressing at
 * quality 11; a file newer than its compressed forms (or without them) is compressed here instead. A
 * per-request zlib call would cost CPU on every page load for the same bytes. Responses carry
 * an ETag (a 304 for a matching If-None-Match), the cache rules and the CSP of headers.ts.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { cacheControlFor, SECURITY_HEADERS } from './headers.ts';

export const CONSOLE_DIST = new URL('../dist', import.meta.url).pathname;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);
/** Encodings stored beside a file by the build, by suffix. */
const PRECOMPRESSED = { br: '.br', gzip: '.gz' } as const;

/** Whether a file of this name and size is served compressed. */
export function isCompressible(path: string, size: number): boolean {
  return COMPRESSIBLE.has(extname(path)) && size > 512;
}

/** The brotli (quality 11) and gzip (level 9) forms of a file, as served. */
export function compressAsset(identity: Uint8Array): { br: Uint8Array; gzip: Uint8Array } {
  return { br: brotliCompressSync(identity, { params: brotliParams(identity.byteLength) }), gzip: gzipSync(identity, { level: 9 }) };
}

/** A compressed form the build wrote beside `file`, if it is not older than the file. */
function precompressed(file: string, suffix: string, fileMtimeMs: number): Uint8Array | undefined {
  const stat = statSync(file + suffix, { throwIfNoEntry: false });
  return stat && stat.mtimeMs >= fileMtimeMs ? readFileSync(file + suffix) : undefined;
}

interface Asset {
  type: string;
  etag: string;
  cacheControl: string;
  identity: Uint8Array;
  br?: Uint8Array;
  gzip?: Uint8Array;
}

export type ConsoleHandler = (request: Request) => Response | undefined;

/**
 * The handler for a built console in `dir`. Without a build (a checkout where `npm run build:console`
 * never ran) `/` answers 503 saying how to build it, and nothing else is taken.
 */
export function consoleAssets(dir: string = CONSOLE_DIST): ConsoleHandler {
  let assets = loaded.get(dir);
  if (!assets) loaded.set(dir, (assets = loadAssets(dir)));
  if (!assets) {
    return (request) => {
      if (new URL(request.url).pathname !== '/') return undefined;
      return new Response('The web console is not built here: run `npm run build:console` (npm start and npm test build it themselves).\n', {
        status: 503,
        headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' },
      });
    };
  }
  return (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    const path = new URL(request.url).pathname;
    const asset = assets.get(path === '/' ? '/index.html' : path);
    if (!asset) return undefined;
    const headers = new Headers({
      ...SECURITY_HEADERS,
      'Content-Type': asset.type,
      'Cache-Control': asset.cacheControl,
      ETag: asset.etag,
      Vary: 'Accept-Encoding',
    });
    if (request.headers.get('if-none-match') === asset.etag) return new Response(null, { status: 304, headers });
    const accepted = request.headers.get('accept-encoding') ?? '';
    let body = asset.identity;
    if (asset.br && /\bbr\b/.test(accepted)) {
      body = asset.br;
      headers.set('Content-Encoding', 'br');
    } else if (asset.gzip && /\bgzip\b/.test(accepted)) {
      body = asset.gzip;
      headers.set('Content-Encoding', 'gzip');
    }
    headers.set('Content-Length', String(body.byteLength));
    return new Response(request.method === 'HEAD' ? null : new Uint8Array(body), { status: 200, headers });
  };
}

/**
 * Loaded builds by folder: `hostadm up` runs a bridge and an agent in one process, and both serve the
 * same build, so it is read and compressed once. A build is immutable while served (Vite names files
 * by content; a rebuild is picked up by the next process).
 */
const loaded = new Map<string, Map<string, Asset> | undefined>();

/**
 * Brotli's window fitted to the file (it never needs to reach further back than the file is long):
 * the same output, but the encoder's memory at quality 11 follows the window, ~33 MB for the default
 * 4 MB window against ~5 MB for a 512 KB one. Such large short-lived blocks also raise glibc's
 * mmap threshold, after which they come from the heap and leave it fragmented for the process's life.
 */
function brotliParams(size: number): Record<number, number> {
  const window = Math.min(zlib.BROTLI_MAX_WINDOW_BITS, Math.max(zlib.BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(size + 16))));
  return { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_LGWIN]: window, [zlib.BROTLI_PARAM_SIZE_HINT]: size };
}

function loadAssets(dir: string): Map<string, Asset> | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const assets = new Map<string, Asset>();
  const files = new Set(walk(dir));
  for (const file of files) {
    const rel = relative(dir, file).split(sep).join('/');
    // `_headers` is the Workers rules file; dotfiles are build bookkeeping: neither is served.
    if (rel.startsWith('_') || rel.split('/').some((part) => part.startsWith('.'))) continue;
    // A compressed form beside its file is served as that file's encoding, not under its own name.
    if (Object.values(PRECOMPRESSED).some((suffix) => file.endsWith(suffix) && files.has(file.slice(0, -suffix.length)))) continue;
    const ext = extname(rel);
    const identity = readFileSync(file);
    const asset: Asset = {
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 22)}"`,
      cacheControl: cacheControlFor(`/${rel}`),
      identity,
    };
    if (isCompressible(rel, identity.byteLength)) {
      const mtimeMs = statSync(file).mtimeMs;
      const br = precompressed(file, PRECOMPRESSED.br, mtimeMs);
      const gzip = precompressed(file, PRECOMPRESSED.gzip, mtimeMs);
      Object.assign(asset, br && gzip ? { br, gzip } : compressAsset(identity));
    }
    assets.set(`/${rel}`, asset);
  }
  return assets;
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}
