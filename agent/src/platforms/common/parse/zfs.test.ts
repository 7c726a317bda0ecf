/** Scripted zpool/zfs output read by column name, with what each tool version lacks read as `-`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capacityPercent, datasetRecords, poolRecords, refusedColumn, refusedParsable } from './zfs.ts';

test('zpool list -H -p: percentages and ratios get their % and x; a missing column reads as -', () => {
  const openzfs = 'zroot\t239444426752\t43705561088\t195738865664\t-\t5\t18\t1.00\tONLINE\t-\n';
  assert.deepEqual(poolRecords(openzfs, new Set()), {
    zroot: {
      alloc: '43705561088',
      altroot: '-',
      cap: '18%',
      dedup: '1.00x',
      expandsz: '-',
      frag: '5%',
      free: '195738865664',
      health: 'ONLINE',
      size: '239444426752',
    },
  });
  // zfs-fuse 0.7: no -p, no frag or expandsz.
  const fuse = 'tank\t123M\t544K\t122M\t0%\t1.00x\tONLINE\t-\n';
  assert.deepEqual(poolRecords(fuse, new Set(['frag', 'expandsz'])), {
    tank: { alloc: '544K', altroot: '-', cap: '0%', dedup: '1.00x', expandsz: '-', frag: '-', free: '122M', health: 'ONLINE', size: '123M' },
  });
  assert.equal(capacityPercent({ cap: '18%' }), 18);
  assert.equal(capacityPercent({ cap: '-' }), null);
});

test('zfs list rows keyed by dataset; short rows and empty cells read as -', () => {
  assert.deepEqual(datasetRecords('tank\t704512\t94896128\t122880\t/mnt/tank\ntank/vol\t8\t9\t10\t-\ntank/odd\t1\n', new Set()), {
    tank: { avail: '94896128', mountpoint: '/mnt/tank', refer: '122880', used: '704512' },
    'tank/vol': { avail: '9', mountpoint: '-', refer: '10', used: '8' },
    'tank/odd': { avail: '-', mountpoint: '-', refer: '-', used: '1' },
  });
});

test('what a refusing tool said: the column, or -p', () => {
  assert.equal(refusedColumn("bad property list: invalid property 'frag'\nusage:\n"), 'frag');
  assert.equal(refusedColumn('cannot open tank: no such pool'), null);
  assert.ok(refusedParsable("invalid option 'p'\nusage:\n\tlist [-H] [-o property[,...]] [pool] ..."));
  assert.ok(!refusedParsable("cannot open 'p': no such pool"));
});
