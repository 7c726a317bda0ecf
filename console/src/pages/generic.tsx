/**
 * A page generated from a class contract, for every class without a page of its own (and any class a
 * later contract adds): read actions without arguments are run and shown as a table (or JSON); every
 * other action gets its form.
 */
import type { HostadmClient } from '@hostadm/client/sdk/src/browser.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { loadClass } from '@hostadm/client/sdk/src/contracts.ts';
import { useEffect, useState } from 'preact/hooks';
import type { LinkState } from '../hosts.ts';
import { ActionForm } from '../ui/action-form.tsx';
import { fieldsOf } from '../ui/schema.ts';

export function ClassPage(props: { client: HostadmClient; state: LinkState; namespace: 'admin' | 'rpc'; name: string }) {
  const [contract, setContract] = useState<ClassContract | null | undefined>(undefined);
  useEffect(() => {
    loadClass(props.namespace, props.name).then((c) => setContract(c ?? null));
  }, [props.namespace, props.name]);
  if (contract === undefined) return <p>Loading the contract…</p>;
  if (contract === null) return <p>This console does not know the class {props.name} (a newer host?).</p>;
  return (
    <section aria-labelledby="class-title">
      <h2 id="class-title">{props.name}</h2>
      <p>{contract.description}</p>
      {Object.entries(contract.actions).map(([action, ac]) => {
        const noFields = fieldsOf(ac.args)?.length === 0;
        return (
          <ActionForm
            key={action}
            client={props.client}
            namespace={props.namespace}
            className={props.name}
            action={action}
            contract={ac}
            title={noFields && ac.access === 'read' ? `${action}: show` : action}
          />
        );
      })}
    </section>
  );
}
