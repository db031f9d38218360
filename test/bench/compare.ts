// Side-by-side measurement: the operation and its baseline in alternating rounds (A B A B …) after a
// warm-up of each, so a burst of noise from the machine lands on both sides instead of deciding the ratio.
// Reports medians and every round's ratio (the spread).
import { type Target, type WrkResult, wrk } from './wrk.ts';

export const settings = {
  rounds: Number(process.env.BENCH_ROUNDS ?? 5),
  seconds: Number(process.env.BENCH_SECONDS ?? 10),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 3),
};

export interface Side {
  name: string;
  /** A fresh target per run (the refresh chain needs new tokens every time); a fixed one otherwise. */
  target: Target | (() => Promise<Target>);
}

export interface Comparison {
  title: string;
  connections: number;
  baseline: string;
  subject: string;
  baselineRps: number;
  subjectRps: number;
  baselineP50: number;
  subjectP50: number;
  baselineP99: number;
  subjectP99: number;
  ratio: number;
  roundRatios: number[];
  aim: string;
  /** No aim: measured for reference only, so neither meets nor falls below anything. */
  forReference: boolean;
  meets: boolean;
  /** Non-2xx answers and socket errors over all rounds, per side: a side with errors measures nothing. */
  baselineErrors: number;
  subjectErrors: number;
  /** Requests the subject side answered in all runs (for the RSS figures). */
  subjectRequests: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function once(side: Side, seconds: number, connections: number): Promise<WrkResult> {
  const target = typeof side.target === 'function' ? await side.target() : side.target;
  return wrk(target, { seconds, connections });
}

/**
 * `aim` is the least subject/baseline throughput ratio the issue asks for (or, with `latencyAim`, the most
 * subject p99 in ms).
 */
export async function compare(
  title: string,
  baseline: Side,
  subject: Side,
  options: { aim?: number; latencyAim?: number; rpsAim?: number; connections?: number },
): Promise<Comparison> {
  const connections = options.connections ?? 10;
  let subjectRequests = 0;
  await once(baseline, settings.warmupSeconds, connections);
  subjectRequests += (await once(subject, settings.warmupSeconds, connections)).requests;
  const rounds: [WrkResult, WrkResult][] = [];
  for (let i = 0; i < settings.rounds; i++) {
    const a = await once(baseline, settings.seconds, connections);
    const b = await once(subject, settings.seconds, connections);
    subjectRequests += b.requests;
    rounds.push([a, b]);
  }
  const pick = (side: 0 | 1, key: 'requestsPerSecond' | 'p50' | 'p99') =>
    median(rounds.map((r) => r[side][key]));
  const baselineRps = pick(0, 'requestsPerSecond');
  const subjectRps = pick(1, 'requestsPerSecond');
  const ratio = subjectRps / baselineRps;
  const subjectP99 = pick(1, 'p99');
  // A comparison without an aim is measured for reference only.
  const hasAim =
    options.aim !== undefined || options.latencyAim !== undefined || options.rpsAim !== undefined;
  const meets =
    options.latencyAim !== undefined
      ? subjectP99 <= options.latencyAim
      : options.rpsAim !== undefined
        ? subjectRps >= options.rpsAim
        : ratio >= (options.aim ?? 0);
  const result: Comparison = {
    title,
    connections,
    baseline: baseline.name,
    subject: subject.name,
    baselineRps,
    subjectRps,
    baselineP50: pick(0, 'p50'),
    subjectP50: pick(1, 'p50'),
    baselineP99: pick(0, 'p99'),
    subjectP99,
    ratio,
    roundRatios: rounds.map((r) => r[1].requestsPerSecond / r[0].requestsPerSecond),
    aim:
      options.latencyAim !== undefined
        ? `p99 ≤ ${options.latencyAim} ms`
        : options.rpsAim !== undefined
          ? `≥ ${options.rpsAim} req/s`
          : options.aim !== undefined
            ? `≥ ${options.aim.toFixed(2)}×`
            : 'none, for reference',
    forReference: !hasAim,
    meets,
    baselineErrors: rounds.reduce((sum, r) => sum + r[0].non2xx + r[0].socketErrors, 0),
    subjectErrors: rounds.reduce((sum, r) => sum + r[1].non2xx + r[1].socketErrors, 0),
    subjectRequests,
  };
  console.log(
    `${title}: ${subject.name} ${subjectRps.toFixed(0)} req/s (p50 ${result.subjectP50} ms, p99 ${subjectP99} ms) vs ` +
      `${baseline.name} ${baselineRps.toFixed(0)} req/s → ${ratio.toFixed(2)}× ` +
      `(rounds ${result.roundRatios.map((r) => r.toFixed(2)).join(', ')}; aim ${result.aim}${hasAim ? `: ${meets ? 'meets' : 'BELOW'}` : ''})` +
      (result.baselineErrors + result.subjectErrors
        ? ` WARNING: errors (non-2xx or socket): baseline ${result.baselineErrors}, subject ${result.subjectErrors}`
        : ''),
  );
  return result;
}
