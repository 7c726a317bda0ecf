/**
 * Password sign-in on FreeBSD: OpenPAM with the services the original used: `login` for users and
 * `system` for root (login's stack adds checks meant for terminal logins, such as pam_securetty).
 */
import { pamVerifier } from '../pam.ts';

export function freebsdPasswordVerifier(): (user: string, password: string) => Promise<boolean> {
  return pamVerifier({
    name: 'OpenPAM',
    libpam: ['libpam.so.6', 'libpam.so'],
    libc: ['libc.so.7'],
    service: (user) => (user === 'root' ? 'system' : 'login'),
    PAM_CONV_ERR: 6,
    PAM_BUF_ERR: 5,
  });
}
