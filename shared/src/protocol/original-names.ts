/**
 * The original service's names, accepted beside the spec's so clients written for it keep working
 * (docs/protocol.md, "The original's names"). Replies echo whatever name the request used.
 */

/** Namespaces the original used, mapped to the spec's. */
export const NAMESPACE_ALIASES: Readonly<Record<string, 'admin'>> = { sysadm: 'admin' };

/** Class names the original gave product names, mapped to the spec's neutral ones. */
export const CLASS_ALIASES: Readonly<Record<string, 'snapshot' | 'jail' | 'vm'>> = {
  lifepreserver: 'snapshot',
  iocage: 'jail',
  iohyve: 'vm',
};

/**
 * The spec's namespace and class name for a request's. Class aliases apply in the class namespace
 * only (`rpc` has no product names); anything unknown is returned as it came.
 */
export function canonicalTarget(namespace: string, name: string): { namespace: string; name: string } {
  const ns = Object.hasOwn(NAMESPACE_ALIASES, namespace) ? NAMESPACE_ALIASES[namespace]! : namespace;
  if (ns !== 'admin' || !Object.hasOwn(CLASS_ALIASES, name)) return { namespace: ns, name };
  return { namespace: ns, name: CLASS_ALIASES[name]! };
}
