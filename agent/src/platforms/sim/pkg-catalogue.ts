/**
 * What the simulated host's pkg starts with: the `FreeBSD` and `FreeBSD-kmods` repositories (the
 * names FreeBSD 14 configures), a few installed packages, some older than their repository version
 * so an upgrade has work to do, one installed as a dependency nothing needs any more (for autoremove)
 * and one vulnerable version (for audit). Values follow the real packages of their names.
 */
export interface SimRepoPackage {
  origin: string;
  name: string;
  version: string;
  comment: string;
  desc: string;
  www: string;
  maintainer: string;
  flatsize: number;
  pkgsize: number;
  licenses: string[];
  /** Origins. */
  deps: string[];
  options?: Record<string, 'on' | 'off'>;
}

export interface SimInstalled {
  version: string;
  automatic: boolean;
  locked: boolean;
  /** Epoch seconds. */
  time: number;
  repository: string;
  id: number;
}

export interface SimVulnerability {
  name: string;
  /** Versions below this one are affected. */
  fixedIn: string;
  topic: string;
  cve: string;
}

export interface SimPkgState {
  repos: Record<string, SimRepoPackage[]>;
  installed: Record<string, SimInstalled>;
  vulnerabilities: SimVulnerability[];
  nextId: number;
}

const pkg = (origin: string, version: string, comment: string, extra: Partial<SimRepoPackage> = {}): SimRepoPackage => {
  const name = origin.slice(origin.indexOf('/') + 1);
  return {
    origin,
    name,
    version,
    comment,
    desc: `${comment}.\n\nThe ${name} package as built by the FreeBSD ports tree.`,
    www: `https://www.freshports.org/${origin}/`,
    maintainer: 'ports@FreeBSD.org',
    flatsize: 1_048_576,
    pkgsize: 262_144,
    licenses: ['BSD2CLAUSE'],
    deps: [],
    ...extra,
  };
};

const FREEBSD = [
  pkg('ports-mgmt/pkg', '1.21.3', 'Package manager', { flatsize: 35_432_000, pkgsize: 6_012_345 }),
  pkg('editors/vim', '9.1.0707', 'Improved version of the vi editor (console flavor)', {
    deps: ['devel/gettext-runtime'],
    licenses: ['VIM'],
    options: { CTAGS_BASE: 'on', NLS: 'on', XTERM_SAVE: 'off' },
    flatsize: 39_221_000,
    pkgsize: 7_911_000,
  }),
  pkg('editors/nano', '8.2', "Nano's ANOther editor, an enhanced free Pico clone", { licenses: ['GPLv3'] }),
  pkg('devel/gettext-runtime', '0.22.5', 'GNU gettext runtime libraries and programs', { licenses: ['LGPL21', 'GPLv3'] }),
  pkg('devel/git', '2.46.2', 'Distributed source code management tool', { deps: ['devel/gettext-runtime', 'security/ca_root_nss'], licenses: ['GPLv2'] }),
  pkg('security/ca_root_nss', '3.104', 'Root certificate bundle from the Mozilla Project', { licenses: ['MPL20'] }),
  pkg('security/sudo', '1.9.16p1', 'Allow others to run commands as root', { deps: ['devel/gettext-runtime'], licenses: ['sudo'] }),
  pkg('shells/bash', '5.2.37', "GNU Project's Bourne Again SHell", { deps: ['devel/gettext-runtime'], licenses: ['GPLv3+'] }),
  pkg('shells/zsh', '5.9_5', 'Z shell', { licenses: ['MIT'] }),
  pkg('sysutils/tmux', '3.5a', 'Terminal Multiplexer', { licenses: ['ISCL'] }),
  pkg('sysutils/htop', '3.3.0', 'Better top(1), an interactive process viewer', { licenses: ['GPLv2'] }),
  pkg('www/nginx', '1.26.2_3,3', 'Robust and small WWW server', { licenses: ['BSD2CLAUSE'] }),
  pkg('games/angband', '4.2.5', 'Rogue-like game with color, X11 support', { licenses: ['GPLv2'] }),
  pkg('games/nethack36', '3.6.7_1', "Dungeon explorin', slashin', hackin' game", { licenses: ['NetHack'] }),
];

const KMODS = [
  pkg('graphics/drm-61-kmod', '6.1.92.1402000_3', 'DRM drivers modules', { licenses: ['BSD2CLAUSE', 'MIT', 'GPLv2'] }),
  pkg('emulators/virtualbox-ose-kmod', '6.1.50.1402000', 'VirtualBox kernel module for FreeBSD', { licenses: ['GPLv2'] }),
];

const INSTALL_TIME = 1_727_000_000;

export function seedPkg(): SimPkgState {
  const installed: Record<string, SimInstalled> = {};
  let id = 1;
  const add = (origin: string, version: string, automatic = false) => {
    installed[origin] = { version, automatic, locked: false, time: INSTALL_TIME + id * 60, repository: 'FreeBSD', id: id++ };
  };
  add('ports-mgmt/pkg', '1.21.3');
  add('devel/gettext-runtime', '0.22.5', true);
  add('security/ca_root_nss', '3.104', true);
  add('editors/vim', '9.1.0500');
  add('security/sudo', '1.9.15p5');
  add('shells/bash', '5.2.37');
  add('sysutils/tmux', '3.4_1');
  return {
    repos: { FreeBSD: FREEBSD, 'FreeBSD-kmods': KMODS },
    installed,
    vulnerabilities: [{ name: 'sudo', fixedIn: '1.9.16', topic: 'sudo -- privilege escalation through chroot option', cve: 'CVE-2025-32463' }],
    nextId: id,
  };
}
