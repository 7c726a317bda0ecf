/**
 * Guest properties as the spec names them (iohyve's): the defaults a new guest gets and the checks a
 * `setprop` value passes before any platform stores it. Values the tools read as numbers or sizes are
 * checked here, so a bad one is a 400 naming the property and nothing is written.
 */
import { HostadmError, type FieldError } from '@hostadm/shared/protocol/errors.ts';

/** What a guest starts with, as `iohyve create` sets it (description: when it was made). */
export function defaultProps(name: string, size: string, now: Date, index: number): Record<string, string> {
  return {
    autogrub: '\\n',
    bargs: '-A_-H_-P',
    boot: '0',
    con: `nmdm${index}`,
    cpu: '1',
    description: now.toISOString(),
    install: 'no',
    loader: 'bhyveload',
    name,
    os: 'default',
    persist: '1',
    ram: '256M',
    size,
    tap: `tap${index}`,
  };
}

const RULES: Readonly<Record<string, { test: RegExp; message: string }>> = {
  cpu: { test: /^([1-9]|[1-9][0-9]|1[01][0-9]|12[0-8])$/, message: 'must be a number of CPUs from 1 to 128' },
  ram: { test: /^[1-9][0-9]{0,6}[MG]$/, message: 'must be a memory size like 512M or 2G' },
  boot: { test: /^[01]$/, message: 'must be 0 or 1' },
  persist: { test: /^[01]$/, message: 'must be 0 or 1' },
  install: { test: /^(yes|no)$/, message: 'must be yes or no' },
  nic: { test: /^(virtio|e1000|rtl8139|none)$/, message: 'must be virtio, e1000, rtl8139 or none' },
  bootorder: { test: /^[cdn]{1,3}$/, message: 'must be boot devices in order: c (disk), d (CD), n (network)' },
};

/** Properties only other actions (or the host) change. */
const NOT_SETTABLE: Readonly<Record<string, string>> = {
  size: 'is changed with resizedisk',
  install: 'is set by install',
  accel: 'is reported by the host',
};

/** Throws a 400 naming every bad property; returns the properties to store. */
export function checkProps(props: Readonly<Record<string, string>>): Record<string, string> {
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(props)) {
    const fixed = NOT_SETTABLE[key];
    if (fixed) errors.push({ field: key, message: fixed });
    const rule = RULES[key];
    if (rule && !rule.test.test(value)) errors.push({ field: key, message: rule.message });
  }
  if (errors.length > 0) throw new HostadmError('BAD_REQUEST', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { fieldErrors: errors });
  return { ...props };
}

/** `ram` in MiB (`2G` → 2048), for the hypervisor's memory argument. */
export function ramMiB(ram: string | undefined): number {
  const match = /^([0-9]+)([MG])$/.exec(ram ?? '');
  if (!match) return 256;
  return Number(match[1]) * (match[2] === 'G' ? 1024 : 1);
}
