/**
 * The one node-forge module this folder loads: its MD5 (WebCrypto has none). It is imported by path,
 * and declared here, because `@types/node-forge` pulls in Node's types, which `shared` must not see.
 */
declare module 'node-forge/lib/md5.js' {
  interface MessageDigest {
    /** `utf8` encodes a JS string first; the default (`raw`) takes one byte per char code. */
    update(message: string, encoding?: 'raw' | 'utf8'): MessageDigest;
    digest(): { getBytes(): string };
  }
  const md5: { create(): MessageDigest };
  export default md5;
}
