/** System information, CPU and memory as live graphs (uPlot), battery and mounts. */
import type { HostadmClient } from '@hostadm/client/sdk/src/browser.ts';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { LinkState } from '../hosts.ts';
import { DataTable, recordColumns, rowsOf } from '../ui/table.tsx';
import { Freshness, useHostData } from '../ui/use-host-data.tsx';

const POINTS = 60;

export function Dashboard(props: { client: HostadmClient; state: LinkState }) {
  const { client, state } = props;
  const info = useHostData(client, state, (c) => c.admin.systemmanager.systemmanager());
  const battery = useHostData(client, state, (c) => c.admin.systemmanager.batteryinfo(), 30_000);
  const mounts = useHostData(client, state, (c) => c.admin.systemmanager.externalmounts(), 30_000);
  const series = useRef<{ t: number[]; cpu: number[]; used: number[]; free: number[] }>({ t: [], cpu: [], used: [], free: [] });
  const live = useHostData(
    client,
    state,
    async (c) => {
      const [cpu, mem] = await Promise.all([c.admin.systemmanager.cpupercentage(), c.admin.systemmanager.memorystats()]);
      const s = series.current;
      const m = mem.memorystats;
      const used = Number(m.active) + Number(m.wired);
      s.t.push(Date.now() / 1000);
      s.cpu.push(Number(cpu.cpupercentage.busytotal));
      s.used.push(used);
      s.free.push(Number(m.free));
      for (const a of [s.t, s.cpu, s.used, s.free]) if (a.length > POINTS) a.shift();
      return s.t.length;
    },
    2000,
  );
  const sys = info.data?.systemmanager;
  const bat = battery.data?.batteryinfo;
  const mountRows = rowsOf(mounts.data?.externalmounts ?? {}) ?? [];
  return (
    <section aria-labelledby="dash-title">
      <h2 id="dash-title">Dashboard</h2>
      <Freshness data={live} />
      <div class="cards">
        <Chart
          title="CPU busy (%)"
          id="cpu-chart"
          points={live.data ?? 0}
          x={series.current.t}
          ys={[{ label: 'busy %', data: series.current.cpu, stroke: '#2f6fd6' }]}
        />
        <Chart
          title="Memory (MB)"
          id="mem-chart"
          points={live.data ?? 0}
          x={series.current.t}
          ys={[
            { label: 'used', data: series.current.used, stroke: '#d6452f' },
            { label: 'free', data: series.current.free, stroke: '#2fa35a' },
          ]}
        />
      </div>
      {sys && (
        <dl class="facts">
          <dt>Host</dt>
          <dd>{sys.hostname}</dd>
          <dt>System</dt>
          <dd>{sys.systemversion}</dd>
          <dt>CPU</dt>
          <dd>
            {sys.cputype} ({sys.cpucores} cores)
          </dd>
          <dt>Memory</dt>
          <dd>{sys.totalmem} MB</dd>
          <dt>Uptime</dt>
          <dd>{sys.uptime}</dd>
          <dt>Battery</dt>
          <dd>{bat && bat.battery === 'true' ? `${bat.level}% (${bat.status})` : 'none'}</dd>
        </dl>
      )}
      <DataTable caption="Mounts" rows={mountRows} columns={recordColumns(mountRows, 'device')} filter={false} />
    </section>
  );
}

function Chart(props: { title: string; id: string; points: number; x: number[]; ys: { label: string; data: number[]; stroke: string }[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    if (!box.current) return;
    const width = Math.min(520, box.current.clientWidth || 320);
    plot.current = new uPlot(
      { width, height: 180, series: [{}, ...props.ys.map((y) => ({ label: y.label, stroke: y.stroke, width: 2 }))], axes: [{}, { size: 50 }] },
      [props.x, ...props.ys.map((y) => y.data)],
      box.current,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => {
    plot.current?.setData([[...props.x], ...props.ys.map((y) => [...y.data])]);
    box.current?.setAttribute('data-points', String(props.points));
  }, [props.points]);
  return (
    <figure class="card">
      <figcaption>{props.title}</figcaption>
      <div id={props.id} ref={box} role="img" aria-label={`${props.title}, last ${props.points} readings`} />
    </figure>
  );
}
