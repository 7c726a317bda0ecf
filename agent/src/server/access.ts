/**
 * Authorization: who may call what. Full access (root or the admin group) may do anything the
 * platform serves; limited users get what each class declares in `limitedAccess`.
 */
import type { Access, ClassContract } from '@hostadm/shared/protocol/define.ts';
import { forbidden } from '@hostadm/shared/protocol/errors.ts';
import type { AccessLevel, Session } from './sessions.ts';
import type { Platform } from '../platforms/types.ts';

export type SubsystemMap = Record<string, 'read' | 'read/write'>;

/** The level a user gets from their groups, or null when they may not sign in at all. */
export function accessLevelFor(user: string, groups: readonly string[], platform: Platform): AccessLevel | null {
  if (user === 'root' || groups.includes(platform.adminGroup)) return 'full';
  if (groups.includes(platform.limitedGroup)) return 'limited';
  return null;
}

export function subsystemKey(contract: Pick<ClassContract, 'namespace' | 'name'>): string {
  return `${contract.namespace}/${contract.name}`;
}

/** `query`: the served subsystems the caller can use. */
export function subsystemsFor(session: Session, served: readonly ClassContract[]): SubsystemMap {
  const map: SubsystemMap = {};
  for (const contract of served) {
    const access = session.level === 'full' ? 'read/write' : contract.limitedAccess;
    if (access) map[subsystemKey(contract)] = access;
  }
  return map;
}

/** `subsystem` names the class as the request did (an original alias such as `sysadm/iocage`). */
export function authorize(session: Session, contract: ClassContract, actionName: string, access: Access, subsystem = subsystemKey(contract)): void {
  if (access === 'none' || access === 'authenticated') return;
  if (session.level === 'full') return;
  const label = `${subsystem} ${actionName}`;
  switch (access) {
    case 'full':
      throw forbidden(`${label} needs full access`);
    case 'wheel':
      throw forbidden(`${label} needs membership of the admin group or full access`);
    case 'read':
      if (contract.limitedAccess === null) throw forbidden(`${label} is not available to limited users`);
      return;
    case 'write':
      if (contract.limitedAccess !== 'read/write') throw forbidden(`${label} needs read/write access to ${subsystem}`);
      return;
  }
}
