/**
 * FreeBSD boot environments through bectl(8), in the base system since 12.0, or else beadm(1) from
 * sysutils/beadm (the tool the original drove). The first call finds which one is installed and the
 * choice is kept; a host with neither says so (501) on every action.
 */
import { unsupported } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { BeadmPort } from '../ports/beadm.ts';
import { BEADM, BECTL, beToolPort, type BeTool } from '../common/be-tool.ts';

const QUICK = { timeoutMs: 30_000 };
const NOT_FOUND = 127;

export function freebsdBeadm(ctx: FreebsdContext): BeadmPort {
  const { runner } = ctx;
  let chosen: BeTool | undefined;
  const tool = async (): Promise<BeTool> => {
    if (chosen) return chosen;
    // `bectl check` exits 0 where boot environments are in use, non-zero elsewhere, 127 when absent.
    if ((await runner.run(['bectl', 'check'], QUICK)).code !== NOT_FOUND) return (chosen = BECTL);
    if ((await runner.run(['beadm', 'version'], QUICK)).code !== NOT_FOUND) return (chosen = BEADM);
    throw unsupported('boot environments need bectl (FreeBSD 12 and later) or beadm (sysutils/beadm); neither is installed on this host');
  };
  return beToolPort(runner, tool);
}
