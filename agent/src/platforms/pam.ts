/**
 * Password checks through the host's PAM stack (Linux-PAM or OpenPAM), called in-process with the
 * koffi FFI: pam_start, a conversation that answers the password prompt, pam_authenticate,
 * pam_acct_mgmt (expired or locked accounts fail), pam_end. The calls run on koffi's worker
 * threads (`.async`), so a module's failure delay (pam_faildelay: seconds) does not stall the
 * agent; checks run one at a time because PAM modules are not all thread-safe.
 *
 * koffi is loaded on first use, not at import: an agent on a host without its native build still
 * starts (sim, key sign-in), and only password sign-in reports why it cannot work.
 */
import type KoffiModule from 'koffi';
import { unsupported } from '@hostadm/shared/protocol/errors.ts';

type Koffi = typeof KoffiModule;

/**
 * PAM modules need more stack than koffi gives async calls by default (128 KiB): Debian's
 * pam_unix/pam_cap overflow it on a successful sign-in and corrupt memory ("stack smashing
 * detected"). 2 MiB is what koffi gives synchronous calls.
 */
const PAM_STACK_BYTES = 2 * 1024 * 1024;

/** Where PAM and libc live, and the constants that differ between Linux-PAM and OpenPAM. */
export interface PamFlavor {
  readonly name: string;
  readonly libpam: readonly string[];
  readonly libc: readonly string[];
  /** The PAM service (an /etc/pam.d file) to check a user against. */
  readonly service: (user: string) => string;
  readonly PAM_CONV_ERR: number;
  readonly PAM_BUF_ERR: number;
}

// The same in both implementations (X/Open XSSO).
const PAM_SUCCESS = 0;
const PAM_PROMPT_ECHO_OFF = 1;
const PAM_PROMPT_ECHO_ON = 2;
const PAM_ERROR_MSG = 3;
const PAM_TEXT_INFO = 4;
const PAM_DISALLOW_NULL_AUTHTOK = 1;

/** struct pam_message { int msg_style; const char *msg; } and struct pam_response { char *resp; int resp_retcode; } on LP64. */
const POINTER_SIZE = 8;
const RESPONSE_SIZE = 16;

type Ptr = bigint;
type Library = ReturnType<Koffi['load']>;
type TypeObject = ReturnType<Koffi['pointer']>;
type PamCall = ((handle: Ptr, flags: number) => number) & { async(handle: Ptr, flags: number, done: (err: unknown, rc: number) => void): void };

interface PamBinding {
  koffi: Koffi;
  /** Whether the slow calls may run on worker threads (koffi's async stack could be enlarged). */
  async: boolean;
  convType: TypeObject;
  pamStart: (service: string, user: string, conv: { conv: Ptr; appdata_ptr: null }, handle: [Ptr | null]) => number;
  pamAuthenticate: PamCall;
  pamAcctMgmt: PamCall;
  pamEnd: PamCall;
  calloc: (count: number, size: number) => Ptr | null;
  strdup: (text: string) => Ptr | null;
  free: (ptr: Ptr) => void;
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function loadFirst(koffi: Koffi, candidates: readonly string[], what: string): Library {
  const errors: string[] = [];
  for (const name of candidates) {
    try {
      return koffi.load(name);
    } catch (err) {
      errors.push(`${name}: ${reason(err)}`);
    }
  }
  throw unsupported(`password sign-in needs ${what}, which could not be loaded (${errors.join('; ')}); use auth_ssl`);
}

/** koffi refuses new settings once any library is loaded; then PAM runs synchronously on koffi's 2 MiB sync stack. */
function enlargeAsyncStack(koffi: Koffi): boolean {
  const current = koffi.config();
  if (current.async_stack_size !== undefined && current.async_stack_size >= PAM_STACK_BYTES) return true;
  try {
    koffi.config({ ...current, async_stack_size: PAM_STACK_BYTES });
    return true;
  } catch {
    return false;
  }
}

/** koffi keeps types by name process-wide: declare ours once per process. */
let pamTypes: { pamConv: TypeObject; convType: TypeObject } | undefined;

async function bind(flavor: PamFlavor): Promise<PamBinding> {
  let koffi: Koffi;
  try {
    koffi = (await import('koffi')).default;
  } catch (err) {
    throw unsupported(`password sign-in needs the koffi FFI module, which could not be loaded (${reason(err)}); use auth_ssl`);
  }
  const async = enlargeAsyncStack(koffi);
  const pam = loadFirst(koffi, flavor.libpam, `the PAM library (${flavor.libpam.join(' or ')})`);
  const libc = loadFirst(koffi, flavor.libc, `the C library (${flavor.libc.join(' or ')})`);
  pamTypes ??= (() => {
    const convType = koffi.pointer(koffi.proto('hostadm_pam_conv_fn', 'int', ['int', 'void *', 'void *', 'void *']));
    return { convType, pamConv: koffi.struct('hostadm_pam_conv', { conv: convType, appdata_ptr: 'void *' }) };
  })();
  const { pamConv, convType } = pamTypes;
  return {
    koffi,
    async,
    convType,
    pamStart: pam.func('pam_start', 'int', ['const char *', 'const char *', koffi.pointer(pamConv), koffi.out(koffi.pointer('void *'))]),
    pamAuthenticate: pam.func('pam_authenticate', 'int', ['void *', 'int']) as PamCall,
    pamAcctMgmt: pam.func('pam_acct_mgmt', 'int', ['void *', 'int']) as PamCall,
    pamEnd: pam.func('pam_end', 'int', ['void *', 'int']) as PamCall,
    // Replies must come from the C heap: PAM frees them (and scrubs the password) itself.
    calloc: libc.func('calloc', 'void *', ['size_t', 'size_t']),
    strdup: libc.func('strdup', 'void *', ['const char *']),
    free: libc.func('free', 'void', ['void *']),
  };
}

function freeReplies(b: PamBinding, replies: Ptr, filled: number): void {
  for (let i = 0; i < filled; i++) {
    const text = b.koffi.decode(replies, i * RESPONSE_SIZE, 'void *') as Ptr | null;
    if (text !== null) b.free(text);
  }
  b.free(replies);
}

/**
 * The conversation: answers the password prompt (echo off) with the password and a name prompt
 * (echo on) with the user, and ignores informational messages. `msg` is an array of pointers to
 * messages in both Linux-PAM and OpenPAM.
 */
function conversation(b: PamBinding, flavor: PamFlavor, user: string, password: string) {
  const { koffi } = b;
  return (count: number, msg: Ptr | null, resp: Ptr | null): number => {
    if (count <= 0 || msg === null || resp === null) return flavor.PAM_CONV_ERR;
    const replies = b.calloc(count, RESPONSE_SIZE);
    if (replies === null) return flavor.PAM_BUF_ERR;
    for (let i = 0; i < count; i++) {
      const message = koffi.decode(msg, i * POINTER_SIZE, 'void *') as Ptr;
      const style = koffi.decode(message, 'int') as number;
      let answer: string | null = null;
      if (style === PAM_PROMPT_ECHO_OFF) answer = password;
      else if (style === PAM_PROMPT_ECHO_ON) answer = user;
      else if (style !== PAM_ERROR_MSG && style !== PAM_TEXT_INFO) {
        freeReplies(b, replies, i);
        return flavor.PAM_CONV_ERR;
      }
      if (answer === null) continue;
      const copy = b.strdup(answer);
      if (copy === null) {
        freeReplies(b, replies, i);
        return flavor.PAM_BUF_ERR;
      }
      koffi.encode(replies, i * RESPONSE_SIZE, 'void *', copy);
    }
    koffi.encode(resp, 'void *', replies);
    return PAM_SUCCESS;
  };
}

function call(b: PamBinding, fn: PamCall, handle: Ptr, arg: number): Promise<number> {
  if (!b.async) return Promise.resolve(fn(handle, arg));
  return new Promise((resolve, reject) => fn.async(handle, arg, (err, rc) => (err ? reject(err) : resolve(rc))));
}

/** A `verifyPassword` for one PAM flavor. Wrong password, unknown or locked account: false. */
export function pamVerifier(flavor: PamFlavor): (user: string, password: string) => Promise<boolean> {
  let binding: Promise<PamBinding> | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  async function attempt(user: string, password: string): Promise<boolean> {
    binding ??= bind(flavor);
    const b = await binding.catch((err: unknown) => {
      binding = undefined;
      throw err;
    });
    // Registered, not transient: PAM keeps the conversation and calls it later, from pam_authenticate.
    const callback = b.koffi.register(conversation(b, flavor, user, password), b.convType);
    try {
      const out: [Ptr | null] = [null];
      const started = b.pamStart(flavor.service(user), user, { conv: callback, appdata_ptr: null }, out);
      const handle = out[0];
      if (started !== PAM_SUCCESS || handle === null) return false;
      let status = await call(b, b.pamAuthenticate, handle, PAM_DISALLOW_NULL_AUTHTOK);
      if (status === PAM_SUCCESS) status = await call(b, b.pamAcctMgmt, handle, PAM_DISALLOW_NULL_AUTHTOK);
      await call(b, b.pamEnd, handle, status);
      return status === PAM_SUCCESS;
    } finally {
      b.koffi.unregister(callback);
    }
  }

  return (user, password) => {
    // A NUL would cut the C string short and check a different password than the one sent.
    if (user === '' || user.includes('\0') || password.includes('\0')) return Promise.resolve(false);
    const result = queue.then(() => attempt(user, password));
    queue = result.catch(() => undefined);
    return result;
  };
}
