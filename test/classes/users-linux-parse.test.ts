/**
 * The pure parts of the users ports: pw(8)'s date forms (the values pw's own tests use), Linux
 * password aging mapped to FreeBSD's `change`, and lsblk's JSON (this VM's real output, which has
 * no removable disk, plus a USB stick entry constructed in lsblk's format).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAccountDate } from '@hostadm/shared/api/fields-accounts.ts';
import { humanSize } from '@hostadm/agent/platforms/linux/parse/users.ts';
import {
  chageArgsFor,
  changeFromShadow,
  expireFromShadow,
  parseGroup,
  parseLsblk,
  parsePasswd,
  parseShadow,
} from '@hostadm/agent/platforms/linux/parse/users.ts';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const DAY = 86_400;

test('pw date forms: epoch, dd-mmm-yyyy, dd-mm-yy, relative; impossible dates refused', () => {
  // pw_useradd_test.sh expects 2121120000 for 20-03-2037, 20-03-37 and 20-Mar-2037.
  for (const v of ['20-03-2037', '20-03-37', '20-Mar-2037', '20-mar-37']) assert.equal(parseAccountDate(v, NOW), 2121120000, v);
  assert.equal(parseAccountDate('0', NOW), 0);
  assert.equal(parseAccountDate('1900000000', NOW), 1900000000);
  assert.equal(parseAccountDate('+2d', NOW), NOW / 1000 + 2 * DAY);
  assert.equal(parseAccountDate('+1w', NOW), NOW / 1000 + 7 * DAY);
  assert.equal(parseAccountDate('+13o', NOW), Date.UTC(2027, 11, 22, 12) / 1000);
  assert.equal(parseAccountDate('+1y', NOW), Date.UTC(2027, 10, 22, 12) / 1000);
  assert.equal(parseAccountDate('01-01-70', NOW), 0, '%y: 70 is 1970');
  for (const bad of ['20-Foo-2037', '20-13-2037', '31-02-2030', '0-01-2030', '+5x', 'tomorrow', '-1', '']) {
    assert.equal(parseAccountDate(bad, NOW), null, bad);
  }
});

test('Linux aging as FreeBSD change/expire times', () => {
  const today = Math.floor(NOW / 1000 / DAY);
  assert.equal(changeFromShadow({ hash: '', lastchg: String(today), max: '99999', expire: '' }), '0', 'no maximum age');
  assert.equal(changeFromShadow({ hash: '', lastchg: String(today), max: '', expire: '' }), '0');
  assert.equal(changeFromShadow({ hash: '', lastchg: String(today), max: '30', expire: '' }), String((today + 30) * DAY));
  assert.equal(changeFromShadow({ hash: '', lastchg: '0', max: '30', expire: '' }), '1', 'must change at next login');
  assert.equal(changeFromShadow({ hash: '', lastchg: '', max: '', expire: '' }), '0');
  assert.equal(changeFromShadow(undefined), '0');
  assert.equal(expireFromShadow({ hash: '', lastchg: '', max: '', expire: '24550' }), '2121120000');
  assert.equal(expireFromShadow({ hash: '', lastchg: '', max: '', expire: '' }), '0');

  assert.deepEqual(chageArgsFor(0, NOW), ['-d', String(today), '-M', '-1']);
  assert.deepEqual(chageArgsFor((today + 30) * DAY, NOW), ['-d', String(today), '-M', '30']);
  assert.deepEqual(chageArgsFor((today - 1) * DAY, NOW), ['-d', '0']);
});

test('getent passwd/shadow/group lines (Debian 12 format)', () => {
  const shadow = parseShadow('root:*:20233:0:99999:7:::\nbob:$y$j9T$abc$def:20779:0:30:7::24550:\n');
  const users = parsePasswd('root:x:0:0:root:/root:/bin/bash\nbob:x:1001:1001:Bob B,Room 4:/home/bob:/bin/sh\nnis-only:x:5:5:x:/:/bin/sh\n', shadow);
  assert.deepEqual(users[1], {
    name: 'bob',
    uid: '1001',
    gid: '1001',
    class: '',
    change: String((20779 + 30) * DAY),
    expire: '2121120000',
    comment: 'Bob B,Room 4',
    home_dir: '/home/bob',
    shell: '/bin/sh',
  });
  assert.deepEqual([users[0]?.change, users[2]?.change], ['0', '0']);
  assert.deepEqual(parseGroup('sudo:x:27:alice,bob\noperator:x:37:\n'), [
    { name: 'sudo', gid: '27', members: ['alice', 'bob'] },
    { name: 'operator', gid: '37', members: [] },
  ]);
});

test('lsblk -J: only removable whole disks, named like personacrypt names them', () => {
  // This VM, captured with `lsblk -J -b -o NAME,RM,SIZE,MODEL,TYPE` (util-linux 2.38.1): nothing removable.
  const vm =
    '{\n   "blockdevices": [\n      {\n         "name": "zram0",\n         "rm": false,\n         "size": 0,\n         "model": null,\n         "type": "disk"\n      },{\n         "name": "vda",\n         "rm": false,\n         "size": 274877906944,\n         "model": null,\n         "type": "disk"\n      }\n   ]\n}\n';
  assert.deepEqual(parseLsblk(vm), {});
  // Constructed in the same format: a USB stick with a partition, and a card reader without a model.
  const usb = JSON.stringify({
    blockdevices: [
      { name: 'sda', rm: false, size: 500107862016, model: 'Samsung SSD 860', type: 'disk' },
      {
        name: 'sdb',
        rm: true,
        size: 8004304896,
        model: 'Cruzer Blade    ',
        type: 'disk',
        children: [{ name: 'sdb1', rm: true, size: 8003256320, model: null, type: 'part' }],
      },
      { name: 'mmcblk0', rm: '1', size: '31914983424', model: null, type: 'disk' },
      { name: 'sr0', rm: true, size: 1073741312, model: 'DVD-RW', type: 'rom' },
    ],
  });
  assert.deepEqual(parseLsblk(usb), { sdb: '<Cruzer Blade> 7.5G', mmcblk0: '<Removable disk> 30G' });
});

test('sizes as gpart shows them', () => {
  assert.equal(humanSize(8004304896), '7.5G');
  assert.equal(humanSize(31914983424), '30G');
  assert.equal(humanSize(512 * 1024 * 1024), '512M');
  assert.equal(humanSize(1000), '1000B');
});
