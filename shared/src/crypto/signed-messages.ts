/**
 * What each key signs, in one place (docs/protocol.md "Signatures" lists every signature of every key).
 *
 * A key signs one kind of thing: every message starts with a fixed label naming its purpose, and no
 * label is a prefix of another, so bytes signed for one purpose can never verify for another. The
 * part a peer chooses (a challenge) is refused unless it has exactly the shape the verifier issues:
 * otherwise a peer could pick a "challenge" that, after the label, spells another purpose's message
 * (a hostile bridge once got the host key to sign "hostadm-hsc1 host" ‖ T this way).
 *
 * The channel's own messages ("hostadm-hsc1 host" ‖ T, "hostadm-hsc1 client" ‖ T ‖ test_string, and
 * hsc2's and hsc3's under their own labels) are built in transcript.ts; they are listed here so that the label
 * table is complete.
 */
import { BST1_LABELS } from './bridge-ticket.ts';
import {
  LABEL_CLIENT_SIG,
  LABEL_HOST_SIG,
  LABEL_HSC2_CLIENT_SIG,
  LABEL_HSC2_HOST_SIG,
  LABEL_RESUME_HOST_SIG,
  LABELS,
  TEST_STRING_PATTERN,
} from './transcript.ts';

/** The labels of the `signature` form, one per purpose. */
export const SIGNATURE_LABELS = {
  /** A client key signing in to an agent directly (`auth_ssl` stage 2, `signature` form). */
  'agent-signin': 'hostadm-signin agent v1\n',
  /** A client key or a host key signing in to a bridge (`auth_ssl` stage 2 at the bridge). */
  'bridge-signin': 'hostadm-signin bridge v1\n',
  /** A client key proving it is loaded in the current session (`register_ssl_cert`'s `proof`). */
  'register-proof': 'hostadm-register-proof v1\n',
} as const;

export type SignaturePurpose = keyof typeof SIGNATURE_LABELS;

/**
 * Every label any hostadm key signs under, the channel's included, and the label a bridge sign-in
 * ticket's secret MACs under (bridge-ticket.ts): checked prefix-free by the tests.
 */
export const ALL_SIGNATURE_LABELS: readonly string[] = [
  ...Object.values(SIGNATURE_LABELS),
  BST1_LABELS.signin,
  LABEL_HOST_SIG,
  LABEL_CLIENT_SIG,
  LABEL_HSC2_HOST_SIG,
  LABEL_HSC2_CLIENT_SIG,
  LABELS.hsc3.hostSig,
  LABELS.hsc3.clientSig,
  LABEL_RESUME_HOST_SIG,
];

/** The shape of what a verifier issues for each purpose: a sign-in test string, or a session token. */
const CHALLENGE_SHAPES: Record<SignaturePurpose, { pattern: RegExp; what: string }> = {
  'agent-signin': { pattern: TEST_STRING_PATTERN, what: 'a test string of 32 letters and digits' },
  'bridge-signin': { pattern: TEST_STRING_PATTERN, what: 'a test string of 32 letters and digits' },
  'register-proof': { pattern: /^[A-Za-z0-9]{40}$/, what: 'a session token of 40 letters and digits' },
};

export class ChallengeShapeError extends Error {
  constructor(purpose: SignaturePurpose) {
    super(`refusing to sign: the ${purpose} challenge is not ${CHALLENGE_SHAPES[purpose].what}`);
    this.name = 'ChallengeShapeError';
  }
}

/** Whether `challenge` has the shape a verifier issues for `purpose` (signers check before signing). */
export function isChallengeShaped(purpose: SignaturePurpose, challenge: string): boolean {
  return CHALLENGE_SHAPES[purpose].pattern.test(challenge);
}

/**
 * The text a key signs for `purpose` over `challenge`: label ‖ challenge (ASCII, so its UTF-8 bytes
 * are the same characters). Throws ChallengeShapeError for a challenge of the wrong shape.
 */
export function signedMessage(purpose: SignaturePurpose, challenge: string): string {
  if (!isChallengeShaped(purpose, challenge)) throw new ChallengeShapeError(purpose);
  return SIGNATURE_LABELS[purpose] + challenge;
}

/**
 * The message a stage-2 proof covers. The spec's original form (`encrypted_string`, the RSA private-key
 * encryption that original clients send) covers the bare challenge, as they compute it; hostadm's
 * `signature` form covers label ‖ challenge. hostadm's own signers only ever make the `signature` form.
 */
export function proofMessage(purpose: SignaturePurpose, challenge: string, form: 'original' | 'signature'): string {
  return form === 'original' ? challenge : signedMessage(purpose, challenge);
}
