/**
 * When the spec's frequencies fall, in the host's local time (as cron ran lpreserver's): snapshots
 * `daily@XX`, `hourly`, `30min`, `10min`, `5min`; scrubs `daily@XX`, `weekly@YY@XX` (YY `01` Monday …
 * `07` Sunday), `monthly@ZZ@XX` (ZZ beyond the month's last day means its last day); replication `XX`
 * (daily at hour XX), `hour`, `30min`, `10min`. `none`, `sync` and `manual` never fall on a time.
 * The contracts have checked the spellings; anything else is "never" here too.
 */

const MINUTE = 60_000;

/** The latest time at or before `now` (ms) when `frequency` falls, or null when it never does. */
export function lastOccurrence(frequency: string, now: number): number | null {
  const minutes = everyMinutes(frequency);
  if (minutes !== null) return lastEveryMinutes(minutes, now);
  let m = /^daily@(\d{1,2})$/.exec(frequency) ?? /^(\d{1,2})$/.exec(frequency);
  if (m) return lastDaily(Number(m[1]), now);
  m = /^weekly@0([1-7])@(\d{1,2})$/.exec(frequency);
  if (m) return lastWeekly(Number(m[1]), Number(m[2]), now);
  m = /^monthly@(\d{1,2})@(\d{1,2})$/.exec(frequency);
  if (m) return lastMonthly(Number(m[1]), Number(m[2]), now);
  return null;
}

function everyMinutes(frequency: string): number | null {
  switch (frequency) {
    case 'hourly':
    case 'hour':
      return 60;
    case '30min':
      return 30;
    case '10min':
      return 10;
    case '5min':
      return 5;
    default:
      return null;
  }
}

/** On the minutes of the local hour divisible by `minutes` (:00, :05, … for 5min). */
function lastEveryMinutes(minutes: number, now: number): number {
  const d = new Date(now);
  d.setSeconds(0, 0);
  d.setMinutes(d.getMinutes() - (d.getMinutes() % minutes));
  return d.getTime();
}

function atHour(d: Date, hour: number): Date {
  const at = new Date(d);
  at.setHours(hour, 0, 0, 0);
  return at;
}

function lastDaily(hour: number, now: number): number {
  const today = atHour(new Date(now), hour);
  if (today.getTime() <= now) return today.getTime();
  today.setDate(today.getDate() - 1);
  return atHour(today, hour).getTime();
}

/** `weekday` 1 = Monday … 7 = Sunday (ISO), as the spec numbers them. */
function lastWeekly(weekday: number, hour: number, now: number): number {
  const d = atHour(new Date(now), hour);
  const iso = d.getDay() === 0 ? 7 : d.getDay();
  d.setDate(d.getDate() - ((iso - weekday + 7) % 7));
  if (d.getTime() > now) d.setDate(d.getDate() - 7);
  return atHour(d, hour).getTime();
}

function lastMonthly(day: number, hour: number, now: number): number {
  const current = new Date(now);
  for (const back of [0, 1]) {
    const first = new Date(current.getFullYear(), current.getMonth() - back, 1);
    const lastDay = new Date(first.getFullYear(), first.getMonth() + 1, 0).getDate();
    const at = new Date(first.getFullYear(), first.getMonth(), Math.min(day, lastDay), hour, 0, 0, 0);
    if (at.getTime() <= now) return at.getTime();
  }
  // Unreachable: last month's occurrence is always in the past.
  return now - 31 * 24 * 60 * MINUTE;
}
