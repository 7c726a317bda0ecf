/**
 * hsr1 resumption (resumption.ts) between a client and an agent in one process: a full hsc1 handshake
 * issues the first ticket, then the tests resume with it, replay it, let it expire, present it to
 * another host, and play a bridge that rewrites R1 or RA.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { describeOnEachEngine } from './engines.test-support.ts';
import {
  answerClientHandshake,
  generateHostKey,
  HandshakeError,
  hostKeyFromPem,
  startClientHandshake,
  type HandshakeErrorReason,
  type HostKey,
} from './handshake.ts';
import { answerResumption, clientTicketFrom, startClientResumption, TICKET_LIFETIME_MS, ticketOfR1, type ClientTicket, type RaArgs } from './resumption.ts';
import { TicketTable, type TicketState } from './resumption-table.ts';
import { warmUpPrimitives } from './primitives.ts';
import { fromBase64, toBase64 } from './subtle.ts';
import type { ChannelVersion } from './transcript.ts';

const client = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const hostGen = await generateHostKey();
const otherHostGen = await generateHostKey();
// Loaded under each engine in turn (a key is its engine's own).
let host: HostKey;
let otherHost: HostKey;
const NOW = 1_800_000_000_000;

/** A full handshake, then the agent's ticket as both sides keep it. */
async function fullHandshakeWithTicket(table: TicketTable, issuer = host, channels: ChannelVersion[] = []): Promise<{ ticket: ClientTicket; now: number }> {
  const hs = await startClientHandshake({ clientKeyPem: client.privateKey, clientSpkiPem: client.publicKey, channels });
  const agent = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: client.publicKey, hostKey: issuer });
  const done = await hs.finish(agent.a1Args, { pinnedHostKey: issuer.publicRaw });
  assert.equal(agent.version, channels[0] ?? 'hsc1');
  assert.ok(await agent.verifyC2(done.c2Args));
  assert.deepEqual(done.resumptionSecret, agent.resumptionSecret, 'both sides derive the same resumption secret');
  const state: TicketState = {
    md5Key: agent.md5Key,
    user: 'alice',
    hostKey: issuer.publicRaw,
    channel: agent.version,
    secret: agent.resumptionSecret,
    expiresAt: NOW + TICKET_LIFETIME_MS,
    provenAt: NOW,
  };
  const message = table.issue(state, NOW);
  const ticket = clientTicketFrom(message, { secret: done.resumptionSecret, hostKey: done.hostKey, md5Key: hs.c1Args.md5_key, now: NOW });
  assert.ok(ticket, 'the ticket message parses');
  return { ticket, now: NOW };
}

async function rejectsWith(p: Promise<unknown>, reason: HandshakeErrorReason): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof HandshakeError && e.reason === reason);
}

describeOnEachEngine(
  'hsr1 resumption',
  () => {
    test('a ticket resumes: both channels talk, the RC confirm checks, and the next ticket has a new secret', async () => {
      const table = new TicketTable();
      const { ticket } = await fullHandshakeWithTicket(table);
      const resume = await startClientResumption(ticket);
      const state = table.take(ticketOfR1(resume.r1Args)!, NOW + 1000);
      assert.ok(state);
      const agent = await answerResumption({ r1Args: resume.r1Args, state, hostKey: host });
      const done = await resume.finish(agent.raArgs);
      assert.ok(agent.verifyRc(done.rcArgs), 'the client confirm verifies');
      assert.equal(agent.verifyRc({ confirm: toBase64(new Uint8Array(32)) }), false, 'a wrong confirm does not');
      assert.equal(await agent.channel.open(await done.channel.seal('{"hello":"agent"}')), '{"hello":"agent"}');
      assert.equal(await done.channel.open(await agent.channel.seal('{"hello":"client"}')), '{"hello":"client"}');
      assert.deepEqual(done.resumptionSecret, agent.resumptionSecret);
      assert.notDeepEqual(done.resumptionSecret, fromBase64(ticket.secret), 'each resumed session has its own next secret');
    });

    test('a ticket is good once: the replayed id finds nothing', async () => {
      const table = new TicketTable();
      const { ticket } = await fullHandshakeWithTicket(table);
      assert.ok(table.take(ticket.ticket, NOW));
      assert.equal(table.take(ticket.ticket, NOW), null);
      assert.equal(table.size, 0);
    });

    test('an expired ticket is refused, and a full table drops its oldest ticket', async () => {
      const table = new TicketTable(2);
      const { ticket } = await fullHandshakeWithTicket(table);
      assert.equal(table.take(ticket.ticket, NOW + TICKET_LIFETIME_MS), null);
      const first = await fullHandshakeWithTicket(table);
      await fullHandshakeWithTicket(table);
      await fullHandshakeWithTicket(table);
      assert.equal(table.size, 2);
      assert.equal(table.take(first.ticket.ticket, NOW), null, 'the oldest went');
    });

    test('another host neither knows the ticket nor can answer for it', async () => {
      const table = new TicketTable();
      const { ticket } = await fullHandshakeWithTicket(table);
      const otherTable = new TicketTable();
      assert.equal(otherTable.take(ticket.ticket, NOW), null, "another agent's table does not have it");
      // Even handed the state, another host key cannot answer: the agent refuses, and a forged RA fails at the client.
      const state = table.take(ticket.ticket, NOW)!;
      const resume = await startClientResumption(ticket);
      await rejectsWith(answerResumption({ r1Args: resume.r1Args, state, hostKey: otherHost }), 'bad-request');
      const forged = await answerResumption({ r1Args: resume.r1Args, state: { ...state, hostKey: otherHost.publicRaw }, hostKey: otherHost });
      await rejectsWith(resume.finish(forged.raArgs), 'bad-signature');
    });

    test('a ticket resumes the version of its session; a ticket whose version was changed (hsc2 for hsc3 or back) fails the resumption', async () => {
      for (const [session, claimed] of [
        ['hsc3', 'hsc2'],
        ['hsc2', 'hsc3'],
        ['hsc3', 'hsc1'],
      ] as const) {
        const table = new TicketTable();
        const { ticket } = await fullHandshakeWithTicket(table, host, [session]);
        assert.equal(ticket.channel, session);
        // Honest: the resumed channel speaks the session's version on both sides.
        const resume = await startClientResumption(ticket);
        const agent = await answerResumption({ r1Args: resume.r1Args, state: table.take(ticket.ticket, NOW)!, hostKey: host });
        const done = await resume.finish(agent.raArgs);
        assert.deepEqual([done.channel.version, agent.channel.version], [session, session]);
        // The client's copy says another version (its ticket message or file altered): Tr differs, RA does not verify.
        const table2 = new TicketTable();
        const { ticket: other } = await fullHandshakeWithTicket(table2, host, [session]);
        const altered = await startClientResumption({ ...other, channel: claimed });
        const agent2 = await answerResumption({ r1Args: altered.r1Args, state: table2.take(other.ticket, NOW)!, hostKey: host });
        await rejectsWith(altered.finish(agent2.raArgs), 'bad-signature');
      }
    });

    test('a bridge rewriting R1 or RA fails the resumption at the client', async () => {
      const cases: [string, (r1: Record<string, string>) => void, (ra: RaArgs) => RaArgs][] = [
        ['R1 client_eph replaced', (r1) => void (r1.client_eph = toBase64(generateX25519Raw())), (ra) => ra],
        ['R1 nonce flipped', (r1) => void (r1.client_nonce = flip(r1.client_nonce!)), (ra) => ra],
        ['RA agent_eph replaced', () => {}, (ra) => ({ ...ra, agent_eph: toBase64(generateX25519Raw()) })],
        ['RA confirm flipped', () => {}, (ra) => ({ ...ra, confirm: flip(ra.confirm) })],
        ['RA host_sig flipped', () => {}, (ra) => ({ ...ra, host_sig: flip(ra.host_sig) })],
      ];
      for (const [what, meddleR1, meddleRa] of cases) {
        const table = new TicketTable();
        const { ticket } = await fullHandshakeWithTicket(table);
        const resume = await startClientResumption(ticket);
        const r1 = { ...resume.r1Args } as Record<string, string>;
        meddleR1(r1);
        const agent = await answerResumption({ r1Args: r1, state: table.take(ticket.ticket, NOW)!, hostKey: host });
        await rejectsWith(resume.finish(meddleRa(agent.raArgs)), 'bad-signature').catch((err: unknown) => {
          throw new Error(`${what}: ${String(err)}`);
        });
      }
    });

    test('warming the engine up while RA is on its way throws nothing and changes no result', async () => {
      const table = new TicketTable();
      const { ticket } = await fullHandshakeWithTicket(table);
      const resume = await startClientResumption(ticket);
      assert.doesNotThrow(() => warmUpPrimitives());
      const agent = await answerResumption({ r1Args: resume.r1Args, state: table.take(ticket.ticket, NOW)!, hostKey: host });
      const done = await resume.finish(agent.raArgs);
      assert.ok(agent.verifyRc(done.rcArgs));
      assert.equal(await agent.channel.open(await done.channel.seal('{"after":"warm-up"}')), '{"after":"warm-up"}');
    });

    test('malformed R1 and ticket messages are refused with a reason', async () => {
      const table = new TicketTable();
      const { ticket } = await fullHandshakeWithTicket(table);
      assert.equal(ticketOfR1({ ticket: 'short' }), null);
      assert.equal(ticketOfR1('junk'), null);
      const state = table.take(ticket.ticket, NOW)!;
      await rejectsWith(answerResumption({ r1Args: { ticket: ticket.ticket, client_eph: 'AAAA', client_nonce: 'AAAA' }, state, hostKey: host }), 'bad-request');
      const issued = { secret: new Uint8Array(32), hostKey: host.publicRaw, md5Key: ticket.md5Key, now: NOW };
      assert.equal(clientTicketFrom({ ticket: ticket.ticket, expires_in: 60, channel: 'hsc9' }, issued), null, 'an unknown channel version');
      assert.equal(clientTicketFrom({ ticket: ticket.ticket, expires_in: -1, channel: 'hsc1' }, issued), null);
      const long = clientTicketFrom({ ticket: ticket.ticket, expires_in: 10 * 365 * 86400, channel: 'hsc1' }, issued);
      assert.equal(long?.expiresAt, NOW + TICKET_LIFETIME_MS, 'the client never keeps a ticket longer than the documented lifetime');
      await rejectsWith(startClientResumption({ ...ticket, channel: 'hsc0' }), 'downgrade');
    });
  },
  async () => {
    host = await hostKeyFromPem(hostGen.privatePkcs8Pem);
    otherHost = await hostKeyFromPem(otherHostGen.privatePkcs8Pem);
  },
);

function flip(b64: string): string {
  const bytes = fromBase64(b64);
  bytes[0]! ^= 1;
  return toBase64(bytes);
}

function generateX25519Raw(): Uint8Array {
  const { publicKey } = generateKeyPairSync('x25519');
  return new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
}
