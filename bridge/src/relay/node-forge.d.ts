/**
 * The two node-forge modules key-crypto.ts loads (and the CLI's self-signed-cert.ts: the ASN.1 one), typed here instead of through `@types/node-forge`:
 * that package starts with `/// <reference types="node" />`, so importing `node-forge` would pull
 * every Node global into the runtime-independent core (bridge/tsconfig.core.json has `types: []`)
 * and that check could no longer catch a stray `Buffer`. Deep imports also keep forge's RSA/PRNG
 * modules (which `require('crypto')` under Node) out of a Workers bundle. Only what is used is typed.
 * Forge works on "binary strings": one char per byte, code points 0-255.
 */

declare module 'node-forge/lib/asn1.js' {
  interface Asn1 {
    tagClass: number;
    type: number;
    constructed: boolean;
    /** Children when constructed, else the content bytes as a binary string. */
    value: string | Asn1[];
  }
  const asn1: {
    Class: { UNIVERSAL: number; CONTEXT_SPECIFIC: number };
    Type: {
      BOOLEAN: number;
      INTEGER: number;
      BITSTRING: number;
      OCTETSTRING: number;
      NULL: number;
      OID: number;
      UTF8: number;
      SEQUENCE: number;
      SET: number;
      UTCTIME: number;
      GENERALIZEDTIME: number;
    };
    fromDer(bytes: string, options?: { strict?: boolean; parseAllBytes?: boolean; decodeBitStrings?: boolean }): Asn1;
    toDer(obj: Asn1): { getBytes(): string };
    create(tagClass: number, type: number, constructed: boolean, value: string | Asn1[]): Asn1;
    derToOid(bytes: string): string;
    oidToDer(oid: string): { getBytes(): string };
    dateToUtcTime(date: Date): string;
    dateToGeneralizedTime(date: Date): string;
  };
  export type { Asn1 };
  export default asn1;
}

declare module 'node-forge/lib/md5.js' {
  const md5: {
    create(): {
      update(msg: string, encoding?: 'raw' | 'utf8'): unknown;
      digest(): { getBytes(): string };
    };
  };
  export default md5;
}
