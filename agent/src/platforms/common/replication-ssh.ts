/**
 * The SSH side of replication: the agent's own key pair (ed25519, made once in `<data>/replication`),
 * its own known_hosts (a remote's host key is learnt on first contact and pinned after), and the one
 * use of a password: installing that key on the remote.
 *
 * The password reaches ssh without a shell and without a terminal: ssh runs with
 * SSH_ASKPASS_REQUIRE=force and SSH_ASKPASS naming a two-line script written for that one call (in a
 * 0700 folder, deleted afterwards) that prints HOSTADM_SSH_PASSWORD, an environment variable of that
 * one ssh process (readable only by its owner, /proc/<pid>/environ is 0400). ssh closes inherited
 * descriptors, so an fd cannot carry it; the script never contains it. Nothing is written to disk.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { failureText, type CommandRunner, type RunResult } from '../../runner/runner.ts';
import type { ReplicationTask } from '../ports/replication.ts';

const QUICK = { timeoutMs: 60_000 };

/** Appends the key line read from stdin to ~/.ssh/authorized_keys unless it is there. Fixed text: no task value is in it. */
const INSTALL_KEY =
  "sh -c 'umask 077 && mkdir -p .ssh && touch .ssh/authorized_keys && read -r key && " +
  '{ grep -qxF "$key" .ssh/authorized_keys || printf "%s\\n" "$key" >> .ssh/authorized_keys; }\'';

export class ReplicationSsh {
  readonly dir: string;
  readonly runner: CommandRunner;

  constructor(runner: CommandRunner, dir: string) {
    this.runner = runner;
    this.dir = dir;
  }

  get keyFile(): string {
    return join(this.dir, 'id_ed25519');
  }

  /** The options every ssh of the agent uses: no user or system config, its own known_hosts, no terminal. */
  private base(task: ReplicationTask): string[] {
    return [
      'ssh',
      '-F',
      'none',
      '-T',
      '-p',
      String(task.port),
      '-o',
      `UserKnownHostsFile=${join(this.dir, 'known_hosts')}`,
      '-o',
      'StrictHostKeyChecking=accept-new',
      '-o',
      'ConnectTimeout=20',
      '-o',
      'ServerAliveInterval=15',
      '-o',
      'ServerAliveCountMax=4',
    ];
  }

  /** ssh with the agent's key only, never asking anything: `[...prefix, user@host, ...remote]`. */
  command(task: ReplicationTask, remote: readonly string[]): string[] {
    return [
      ...this.base(task),
      '-i',
      this.keyFile,
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'PasswordAuthentication=no',
      `${task.user}@${task.host}`,
      '--',
      ...remote,
    ];
  }

  /** Runs a command on the remote with the agent's key. */
  remote(task: ReplicationTask, remote: readonly string[], signal?: AbortSignal): Promise<RunResult> {
    return this.runner.run(this.command(task, remote), { ...QUICK, signal });
  }

  /** The key pair, made on first use. */
  async ensureKey(): Promise<string> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if (!existsSync(this.keyFile)) {
      const made = await this.runner.run(
        ['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', `hostadm-replication@${hostname().split('.')[0] ?? 'agent'}`, '-f', this.keyFile],
        QUICK,
      );
      if (made.code !== 0) throw new HostadmError('HOST_ERROR', `making the replication key: ${failureText('ssh-keygen', made)}`);
    }
    return readFileSync(`${this.keyFile}.pub`, 'utf8').trim();
  }

  /** Installs the agent's key for task.user with `password`, used for this one ssh and then dropped. */
  async installKey(task: ReplicationTask, password: string, signal?: AbortSignal): Promise<void> {
    const publicKey = await this.ensureKey();
    const scratch = mkdtempSync(join(this.dir, 'askpass-'));
    const askpass = join(scratch, 'askpass');
    try {
      writeFileSync(askpass, '#!/bin/sh\nprintf \'%s\\n\' "$HOSTADM_SSH_PASSWORD"\n', { mode: 0o700 });
      chmodSync(scratch, 0o700);
      const argv = [
        ...this.base(task),
        '-o',
        'PubkeyAuthentication=no',
        '-o',
        'PreferredAuthentications=password,keyboard-interactive',
        '-o',
        'NumberOfPasswordPrompts=1',
        `${task.user}@${task.host}`,
        '--',
        INSTALL_KEY,
      ];
      const result = await this.runner.run(argv, {
        ...QUICK,
        signal,
        input: `${publicKey}\n`,
        env: { SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: 'hostadm:0', HOSTADM_SSH_PASSWORD: password },
      });
      if (result.code !== 0) {
        const said = result.stderr.trim().split('\n').at(-1) ?? '';
        throw new HostadmError(
          'HOST_ERROR',
          `installing the replication key for ${task.user}@${task.host}:${task.port}: ${said || failureText('ssh', result)}`,
        );
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}
