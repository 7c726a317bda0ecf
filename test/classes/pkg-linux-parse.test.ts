/**
 * The Linux pkg parsers on outputs recorded on Debian 12 (test/fixtures/linux/pkg, sources in
 * pkg.source.md): apt's Packages index fed in small chunks as the port streams it, our dpkg-query
 * format, `apt-get indextargets` (deb822 and flat sources), and `apt-get -s upgrade` with and without a
 * held package.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  DPKG_FORMAT,
  originOf,
  parseDpkgQuery,
  parseIndexTargets,
  parseSimulatedUpgrade,
  stanzaParser,
  stanzaToRecord,
  stanzaToSearchRecord,
  type Stanza,
} from '@hostadm/agent/platforms/linux/parse/pkg.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/linux/pkg/${name}`, import.meta.url), 'utf8');

test('a Packages index streamed in 7-byte chunks gives the same stanzas; records and search results from them', () => {
  const text = fixture('bookworm-main-Packages-excerpt.txt');
  const stanzas: Stanza[] = [];
  const parser = stanzaParser((s) => stanzas.push(s));
  for (let i = 0; i < text.length; i += 7) parser.push(text.slice(i, i + 7));
  parser.end();
  assert.deepEqual(
    stanzas.map((s) => s.Package),
    ['libc6', 'hello', 'nano'],
  );
  const nano = stanzas[2] as Stanza;
  const record = stanzaToRecord(nano, 'deb.debian.org_debian_bookworm_main');
  assert.equal(record.origin, 'editors/nano');
  assert.equal(record.comment, 'small, friendly text editor inspired by Pico');
  assert.match(record.dep_formula, /libc6/);
  assert.equal(record.flatsize, String(Number(nano['Installed-Size']) * 1024));
  const found = stanzaToSearchRecord(nano);
  assert.match(found.path, /^pool\/main\/n\/nano\/nano_.*_amd64\.deb$/);
  assert.equal(found.cksum, nano.SHA256);
  assert.equal(found.pkgsize, nano.Size);
  assert.equal(stanzaToRecord(stanzas[0] as Stanza, 'x').origin, 'libs/libc6');
});

test("dpkg-query in the port's own format: installed packages with summary, long text, flags", () => {
  assert.ok(DPKG_FORMAT.includes('${db:Status-Want}'));
  const [bash, coreutils] = parseDpkgQuery(fixture('dpkg-query-bash-coreutils.txt'), new Set(['coreutils']));
  assert.equal(bash?.origin, 'shells/bash');
  assert.equal(bash?.record.comment, 'GNU Bourne Again SHell');
  assert.match(bash?.record.desc ?? '', /^Bash is an sh-compatible command language interpreter/);
  assert.equal(bash?.record.automatic, '0');
  assert.equal(bash?.record.locked, '0');
  assert.match(bash?.record.time ?? '', /^\d+$/);
  assert.equal(coreutils?.origin, 'utils/coreutils');
  assert.equal(coreutils?.record.automatic, '1');
  assert.ok(bash?.depends.includes('base-files'), JSON.stringify(bash?.depends));
});

test('apt-get indextargets: repositories named from where they are, flat ones without the unexpanded component', () => {
  assert.deepEqual(
    parseIndexTargets(fixture('indextargets-bookworm.txt')).map((t) => t.repo),
    ['deb.debian.org_debian_bookworm_main', 'deb.debian.org_debian_bookworm-updates_main', 'deb.debian.org_debian-security_bookworm-security_main'],
  );
  assert.deepEqual(parseIndexTargets(fixture('indextargets-flat.txt')), [
    { repo: 'srv_hostadm-test-repo', filename: '/var/lib/apt/lists/_srv_hostadm-test-repo_._Packages.lz4' },
  ]);
  assert.equal(originOf('contrib/net', 'x'), 'net/x');
  assert.equal(originOf(undefined, 'x'), 'misc/x');
});

test('apt-get -s upgrade: a held package is kept back, not listed; unheld it is', () => {
  assert.deepEqual(parseSimulatedUpgrade(fixture('apt-get-s-upgrade-held.txt')), [{ name: 'demo-lib', from: '1.0', to: '1.1' }]);
  assert.deepEqual(
    parseSimulatedUpgrade(fixture('apt-get-s-upgrade-none-held.txt')).map((u) => u.name),
    ['demo-lib', 'demo-app'],
  );
  assert.deepEqual(parseSimulatedUpgrade('Reading package lists...\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n'), []);
});
