/**
 * The simulated host's file tree (the `fs` slice): a FreeBSD 14 layout with the owners and modes a
 * fresh install has (after mtree's BSD.root.dist / BSD.usr.dist / BSD.var.dist), two home
 * directories and `/home` as the link to `usr/home` that the installer creates.
 */

export type SimFsNode =
  | { type: 'dir'; uid: number; gid: number; mode: number; children: Record<string, SimFsNode> }
  | { type: 'file'; uid: number; gid: number; mode: number; size: number }
  | { type: 'link'; uid: number; gid: number; target: string };

export interface SimFs {
  root: SimFsNode;
}

type Children = Record<string, SimFsNode>;

const dir = (mode: number, children: Children = {}, uid = 0, gid = 0): SimFsNode => ({ type: 'dir', uid, gid, mode, children });
const file = (size: number, mode = 0o644, uid = 0, gid = 0): SimFsNode => ({ type: 'file', uid, gid, mode, size });
const link = (target: string): SimFsNode => ({ type: 'link', uid: 0, gid: 0, target });
const binaries = (names: Record<string, number>): Children => Object.fromEntries(Object.entries(names).map(([n, size]) => [n, file(size, 0o555)]));

/** The dot files `adduser` copies from /usr/share/skel. */
function skel(uid: number, gid: number): Children {
  const sizes: Record<string, number> = {
    '.cshrc': 1003,
    '.login': 311,
    '.login_conf': 79,
    '.mail_aliases': 271,
    '.mailrc': 289,
    '.profile': 966,
    '.shrc': 1010,
  };
  return Object.fromEntries(Object.entries(sizes).map(([n, size]) => [n, file(size, 0o644, uid, gid)]));
}

export function seedFs(): SimFs {
  const etc = dir(0o755, {
    'rc.conf': file(412),
    'rc.conf.local': file(0),
    passwd: file(1574),
    'master.passwd': file(1837, 0o600),
    group: file(503),
    'pwd.db': file(40960),
    'spwd.db': file(40960, 0o600),
    hosts: file(1130),
    fstab: file(218),
    'resolv.conf': file(53),
    'login.conf': file(12056),
    'sysctl.conf': file(387),
    crontab: file(1155),
    'motd.template': file(1307),
    'newsyslog.conf': file(1484),
    'syslog.conf': file(1319),
    services: file(86697),
    shells: file(263),
    ssl: dir(0o755, { 'openssl.cnf': file(12324) }),
    ssh: dir(0o755, {
      sshd_config: file(3888),
      ssh_config: file(1643),
      moduli: file(577867),
      ssh_host_ed25519_key: file(399, 0o600),
      'ssh_host_ed25519_key.pub': file(91),
      ssh_host_rsa_key: file(2590, 0o600),
      'ssh_host_rsa_key.pub': file(563),
    }),
    'rc.d': dir(0o755, binaries({ sshd: 5029, cron: 896, syslogd: 2877, netif: 7403, ntpd: 4587, zfs: 1675 })),
    periodic: dir(0o755, { daily: dir(0o755), weekly: dir(0o755), monthly: dir(0o755), security: dir(0o755) }),
    defaults: dir(0o755, { 'rc.conf': file(38316), 'periodic.conf': file(13869), 'devfs.rules': file(3566) }),
  });
  const usrLocal = dir(0o755, {
    bin: dir(0o755, binaries({ bash: 1078288, sudo: 316576, node: 92011240, hostadm: 1420, rsync: 496080 })),
    etc: dir(0o755, {
      'pkg.conf': file(10052),
      sudoers: file(4332, 0o440),
      'rc.d': dir(0o755, binaries({ hostadm: 1216 })),
      hostadm: dir(0o750, { 'agent.json': file(331, 0o640) }),
    }),
    lib: dir(0o755),
    libexec: dir(0o755),
    sbin: dir(0o755, binaries({ pkg: 3952624, 'pkg-static': 14418224 })),
    share: dir(0o755, { doc: dir(0o755), man: dir(0o755) }),
    www: dir(0o755),
  });
  const home = dir(0o755, {
    admin: dir(
      0o700,
      {
        ...skel(1001, 1001),
        '.ssh': dir(0o700, { authorized_keys: file(96, 0o600, 1001, 1001) }, 1001, 1001),
        'notes.txt': file(2209, 0o600, 1001, 1001),
      },
      1001,
      1001,
    ),
    operator: dir(0o755, { ...skel(2, 5), 'backup.log': file(48213, 0o644, 2, 5), scripts: dir(0o750, { 'rotate.sh': file(734, 0o750, 2, 5) }, 2, 5) }, 2, 5),
  });
  const root = dir(0o755, {
    '.cshrc': file(1011),
    '.profile': file(485),
    COPYRIGHT: file(6109, 0o444),
    bin: dir(
      0o755,
      binaries({
        cat: 12336,
        chmod: 13392,
        cp: 29008,
        csh: 425472,
        date: 25552,
        df: 21792,
        echo: 5928,
        ls: 40368,
        mkdir: 9840,
        mv: 17136,
        ps: 46704,
        pwd: 7264,
        rm: 20464,
        sh: 166648,
        sleep: 7632,
        test: 12728,
        '[': 12728,
      }),
    ),
    boot: dir(0o755, {
      kernel: dir(0o755, { kernel: file(29446312, 0o555), 'zfs.ko': file(6987120, 0o555) }),
      defaults: dir(0o755, { 'loader.conf': file(36151, 0o444) }),
      'loader.conf': file(94),
      loader: file(548864, 0o555),
    }),
    dev: dir(0o555, {
      null: file(0, 0o666),
      zero: file(0, 0o666),
      random: file(0, 0o666),
      console: file(0, 0o600),
      ada0: file(0, 0o640, 0, 5),
      pts: dir(0o755),
    }),
    etc,
    home: link('usr/home'),
    lib: dir(0o755),
    libexec: dir(0o755),
    media: dir(0o755),
    mnt: dir(0o755),
    net: dir(0o755),
    proc: dir(0o555),
    rescue: dir(0o755),
    // Readable by root only (FreeBSD ships 0750 root:wheel; this host keeps it tighter).
    root: dir(0o700, { ...skel(0, 0), '.history': file(8123, 0o600), '.k5login': file(2, 0o644) }),
    sbin: dir(0o755, binaries({ ifconfig: 241744, init: 1384584, mount: 35888, reboot: 12752, sysctl: 34160, zfs: 19616, zpool: 19472 })),
    // Dangling until the source tree is installed, exactly as on a fresh FreeBSD.
    sys: link('usr/src/sys'),
    tmp: dir(0o1777),
    usr: dir(0o755, {
      bin: dir(0o755, binaries({ awk: 191688, find: 63344, grep: 76760, less: 188824, sed: 53744, ssh: 155040, vi: 496064, su: 21704 })),
      home,
      include: dir(0o755),
      lib: dir(0o755),
      libexec: dir(0o755),
      local: usrLocal,
      sbin: dir(0o755, binaries({ pw: 123176, sysrc: 25470, service: 7227, cron: 48248, sshd: 880312 })),
      share: dir(0o755, { skel: dir(0o755, skel(0, 0)), man: dir(0o755), zoneinfo: dir(0o755) }),
      src: dir(0o755),
    }),
    var: dir(0o755, {
      log: dir(0o755, {
        messages: file(28544),
        'auth.log': file(3391, 0o600),
        cron: file(12288, 0o600),
        'daily.log': file(6640, 0o640),
        security: file(1192, 0o600),
        'utx.log': file(7490, 0o644),
        hostadm: dir(0o750, { 'agent.log': file(19872, 0o640) }),
      }),
      db: dir(0o755, { pkg: dir(0o755, { 'local.sqlite': file(2703360) }) }),
      run: dir(0o755, { 'sshd.pid': file(4), 'cron.pid': file(4) }),
      mail: dir(0o775, {}, 0, 6),
      tmp: dir(0o1777),
      empty: dir(0o555),
    }),
  });
  return { root };
}
