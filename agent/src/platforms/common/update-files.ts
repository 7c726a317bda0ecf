/**
 * What the agent itself keeps about updates on a real host, in `<data>/update/`: the settings
 * (`settings.json`), the last check (`check.json`) and its own update logs (`logs/`, the newest
 * `MAX_LOGS` kept). Files are written whole and renamed into place, so a reader never sees half a
 * settings file (trueos-core#158: settings that read back differently from what was saved). Logs the
 * host keeps itself (apt's history, pc-updatemanager's) join the listing through `hostLogs`.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { patchRecord, UPDATE_STATUSES, updateSettingsRecord } from '@hostadm/shared/api/update.ts';
import type { UpdateLogInfo, UpdateLogWriter, UpdateSettings, UpdateStore } from '../ports/update.ts';

export const MAX_LOGS = 50;
/** A log bigger than this is cut when read (the head says so); an apt upgrade of a whole system stays well below. */
const MAX_LOG_READ_BYTES = 8 * 1024 * 1024;
const AGENT_LOG = /^update-[0-9TZ]+-[a-z]+(-\d+)?\.log$/;

/** Logs a host keeps on its own, under names that cannot be mistaken for the agent's. */
export interface HostLogs {
  list(): Promise<UpdateLogInfo[]>;
  read(name: string): Promise<string | null>;
}

const storedCheck = z.object({
  at: z.number(),
  result: z.object({
    status: z.enum(UPDATE_STATUSES),
    details: z.string(),
    security: z.object({ name: z.string() }).optional(),
    majorupgrade: z.object({ name: z.string(), tag: z.string(), version: z.string() }).optional(),
    packageupdate: z.object({ name: z.string() }).optional(),
    patches: z.array(patchRecord()).optional(),
  }),
});

export function fileUpdateStore(dataDir: string, hostLogs?: HostLogs): UpdateStore {
  const dir = join(dataDir, 'update');
  const logDir = join(dir, 'logs');
  const settingsFile = join(dir, 'settings.json');
  const checkFile = join(dir, 'check.json');

  const writeWhole = (path: string, text: string) => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, path);
  };

  const agentLogs = (): UpdateLogInfo[] => {
    if (!existsSync(logDir)) return [];
    return readdirSync(logDir)
      .filter((name) => AGENT_LOG.test(name))
      .map((name) => {
        const st = statSync(join(logDir, name));
        const born = st.birthtimeMs > 0 ? st.birthtimeMs : st.ctimeMs;
        return { name, started: Math.floor(Math.min(born, st.mtimeMs) / 1000), finished: Math.floor(st.mtimeMs / 1000) };
      });
  };

  return {
    async readSettings() {
      const text = readOptional(settingsFile);
      if (text === null) return {};
      const parsed = updateSettingsRecord().safeParse(JSON.parse(text));
      if (!parsed.success) throw new Error(`${settingsFile} is not a settings file: ${parsed.error.message}`);
      return parsed.data;
    },
    async writeSettings(settings: UpdateSettings) {
      writeWhole(settingsFile, `${JSON.stringify(settings, null, 2)}\n`);
    },
    async readCheck() {
      const text = readOptional(checkFile);
      if (text === null) return null;
      const parsed = storedCheck.safeParse(JSON.parse(text));
      // A file from another version is a check to run again, not an error.
      return parsed.success ? parsed.data : null;
    },
    async writeCheck(check) {
      if (check === null) {
        if (existsSync(checkFile)) unlinkSync(checkFile);
        return;
      }
      writeWhole(checkFile, JSON.stringify(check));
    },
    async listLogs() {
      const all = [...agentLogs(), ...(hostLogs ? await hostLogs.list() : [])];
      return all.sort((a, b) => b.started - a.started || a.name.localeCompare(b.name));
    },
    async readLog(name) {
      if (AGENT_LOG.test(name)) {
        const path = join(logDir, name);
        if (!existsSync(path)) return null;
        const size = statSync(path).size;
        const text = readFileSync(path, 'utf8');
        return size > MAX_LOG_READ_BYTES ? `[first ${MAX_LOG_READ_BYTES} of ${size} bytes]\n${text.slice(0, MAX_LOG_READ_BYTES)}` : text;
      }
      return hostLogs ? hostLogs.read(name) : null;
    },
    createLog(name): UpdateLogWriter {
      mkdirSync(logDir, { recursive: true, mode: 0o700 });
      let path = join(logDir, name);
      // Two updates in the same second (one refused at once, say) must not share a log.
      for (let n = 2; existsSync(path); n++) path = join(logDir, name.replace(/\.log$/, `-${n}.log`));
      closeSync(openSync(path, 'wx', 0o600));
      prune(logDir, agentLogs());
      return {
        append(text) {
          if (text !== '') appendFileSync(path, text);
        },
        close() {},
      };
    },
  };
}

/** Keeps the newest `MAX_LOGS` agent logs (nothing in `--data` grows without bound). */
function prune(logDir: string, logs: UpdateLogInfo[]): void {
  const oldestFirst = [...logs].sort((a, b) => a.started - b.started || a.name.localeCompare(b.name));
  for (const log of oldestFirst.slice(0, Math.max(0, oldestFirst.length - MAX_LOGS))) unlinkSync(join(logDir, log.name));
}

function readOptional(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
