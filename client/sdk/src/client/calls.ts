/**
 * Calls checked against the contracts: the class and action are looked up (aliases resolved to the
 * canonical name), the arguments checked before anything is sent (a refusal is a local 400 naming
 * every field, like the host's), and with `validateReplies` the reply checked too. Contracts load
 * lazily, so a client pays only for the classes it uses; the checks (validate.ts and the field-error
 * wording it brings) load on the first check, so a call that needs none (`sendChecked`) loads neither.
 */
import type { ActionContract } from '@hostadm/shared/protocol/define.ts';
import { isObject, loadClass, loadOperation, resolveAction } from '../contracts.ts';
import { HostadmRequestError, ReplyContractError, type RequestTarget } from '../errors.ts';
import type { CallOptions } from '../types.ts';
import type { SendRequest } from './requests.ts';

const checks = () => import('../validate.ts');

/** A class action found in the contracts, its arguments already checked. */
export interface PreparedCall {
  /** The action's canonical name (an alias resolved). */
  canonical: string;
  contract: ActionContract;
}

export class ContractCalls {
  private readonly send: SendRequest;
  private readonly validateArgs: boolean;
  private readonly validateReplies: boolean;

  constructor(send: SendRequest, settings: { validateArgs: boolean; validateReplies: boolean }) {
    this.send = send;
    this.validateArgs = settings.validateArgs;
    this.validateReplies = settings.validateReplies;
  }

  /** An action by name: looked up, checked, sent; resolves with the reply (never a job handle). */
  async call(namespace: string, className: string, action: string, args: unknown, options: CallOptions): Promise<unknown> {
    const { canonical, contract } = await this.prepare(namespace, className, action, args);
    return this.sendPrepared(namespace, className, canonical, contract, args, options);
  }

  /** Looks the action up and checks `args`; throws the local refusal (404 or 400) instead of sending. */
  async prepare(namespace: string, className: string, action: string, args: unknown): Promise<PreparedCall> {
    const target: RequestTarget = { namespace, name: className, action };
    const classContract = await loadClass(namespace, className);
    if (!classContract) throw new HostadmRequestError(404, `unknown class ${namespace}/${className} (not in the contracts)`, target, { local: true });
    const canonical = resolveAction(classContract, action);
    if (canonical === undefined) {
      const known = Object.keys(classContract.actions).join(', ');
      throw new HostadmRequestError(400, `unknown action ${action} of ${namespace}/${className}; actions: ${known}`, target, {
        local: true,
        fieldErrors: [{ field: 'action', message: `unknown action ${action}` }],
      });
    }
    const contract = classContract.actions[canonical]!;
    if (!isObject(args)) {
      throw new HostadmRequestError(
        400,
        `arguments of ${namespace}/${className} ${canonical} must be an object`,
        { ...target, action: canonical },
        {
          local: true,
          fieldErrors: [{ field: '(args)', message: 'must be an object' }],
        },
      );
    }
    if (this.validateArgs) {
      const { check, invalidArgs } = await checks();
      const problems = check(contract.args, args);
      if (problems.length > 0) throw invalidArgs({ ...target, action: canonical }, problems);
    }
    return { canonical, contract };
  }

  /** Sends a prepared call: the class is the envelope's name, the action goes inside `args`. */
  async sendPrepared(namespace: string, className: string, action: string, contract: ActionContract, args: unknown, options: CallOptions): Promise<unknown> {
    const target = { namespace, name: className, action };
    const reply = await this.send(target, { action, ...(args as object) }, options);
    if (this.validateReplies) await this.checkReply(contract, target, reply);
    return reply;
  }

  /**
   * A class action the caller looked up and checked against its contract itself (`action` canonical,
   * `args` an object that passed): sent as `call` sends it, without loading the contract or the
   * checks, unless `validateReplies` asks for the reply to be checked (then the contract loads).
   */
  async sendChecked(namespace: string, className: string, action: string, args: Record<string, unknown>, options: CallOptions): Promise<unknown> {
    if (this.validateReplies) {
      const contract = (await loadClass(namespace, className))?.actions[action];
      if (contract) return this.sendPrepared(namespace, className, action, contract, args, options);
    }
    return this.send({ namespace, name: className, action }, { action, ...args }, options);
  }

  /** An `rpc` operation without actions (`identify`, `query`): sent as is, the reply checked if asked. */
  async operation(name: 'identify' | 'query', args: unknown, options: CallOptions): Promise<unknown> {
    const contract = await loadOperation('rpc', name);
    const target = { namespace: 'rpc', name };
    const reply = await this.send(target, args, options);
    if (this.validateReplies && contract) await this.checkReply(contract, target, reply);
    return reply;
  }

  private async checkReply(contract: ActionContract, target: RequestTarget, reply: unknown): Promise<void> {
    const { check } = await checks();
    const problems = check(contract.reply, reply);
    if (problems.length > 0) throw new ReplyContractError(target, problems, reply);
  }
}
