/**
 * Shared by the powerd and moused tests: calling a class and reading its reply, and the out-of-range
 * values each option must refuse (the spec's "Pointer device options" and "Power daemon options").
 */
import assert from 'node:assert/strict';
import type { TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';

/** The reply args of a successful call. */
export async function okCall(client: TestClient, cls: string, action: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await client.call(cls, action, args);
  assert.equal(reply.name, 'response', `${cls} ${action} ${JSON.stringify(args)}: ${JSON.stringify(reply.args)}`);
  return reply.args as Record<string, unknown>;
}

/** Every value `set_options` must refuse, by option: past each end of its range, wrong kinds, unknown modes. */
export const POWERD_REFUSED: Array<[string, unknown]> = [
  ['ac_power_mode', 'turbo'],
  ['ac_power_mode', ''],
  ['battery_power_mode', 'Maximum'],
  ['unknown_power_mode', 3],
  ['adaptive_lower_threshold_percent', 0],
  ['adaptive_lower_threshold_percent', 101],
  ['adaptive_lower_threshold_percent', '50.5'],
  ['adaptive_raise_threshold_percent', -1],
  ['adaptive_raise_threshold_percent', '101'],
  ['max_cpu_freq', 0],
  ['max_cpu_freq', -2],
  ['max_cpu_freq', '2.4e9'],
  ['min_cpu_freq', '-5'],
  ['min_cpu_freq', 1.5],
  ['polling_interval_ms', 0],
  ['polling_interval_ms', '-250'],
  ['polling_interval_ms', 'fast'],
];

/** Every value `set_device_options` must refuse. */
export const MOUSED_REFUSED: Array<[string, unknown]> = [
  ['accel_exponential', 0.99],
  ['accel_exponential', 2.01],
  ['accel_exponential', '3'],
  ['accel_linear', 0],
  ['accel_linear', 0.009],
  ['accel_linear', 100.01],
  ['accel_linear', '1e2'],
  ['emulate_button_3', 'yes'],
  ['emulate_button_3', 1],
  ['hand_mode', 'both'],
  ['resolution', 'medium'],
  ['resolution', 400],
  ['terminate_drift_threshold_pixels', -1],
  ['terminate_drift_threshold_pixels', 1001],
  ['terminate_drift_threshold_pixels', 2.5],
  ['virtual_scrolling', 'on'],
];

/** A 400 whose message and field errors name the option. */
export function assertRefusedNaming(reply: Parameters<typeof expectError>[0], option: string, context: string): void {
  const err = expectError(reply, 400);
  assert.ok(
    err.errors?.some((e) => e.field === option),
    `${context}: no field error for ${option}: ${JSON.stringify(err)}`,
  );
  assert.match(err.message, new RegExp(option), `${context}: message does not name ${option}`);
}
