/**
 * Password sign-in on Linux: the host's Linux-PAM stack, service `login` by default (the one a
 * console login uses, so the same accounts, expiry and locks apply), or another /etc/pam.d file.
 */
import { pamVerifier } from '../pam.ts';

export function linuxPasswordVerifier(service = 'login'): (user: string, password: string) => Promise<boolean> {
  return pamVerifier({
    name: 'Linux-PAM',
    libpam: ['libpam.so.0', 'libpam.so'],
    libc: ['libc.so.6'],
    service: () => service,
    PAM_CONV_ERR: 19,
    PAM_BUF_ERR: 5,
  });
}
