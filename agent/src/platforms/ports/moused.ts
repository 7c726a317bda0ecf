/**
 * The `moused` port: pointer devices and the mouse daemon serving each. Device names reaching it
 * were resolved against `listDevices()` by the handler, and option sets are complete and validated
 * by the contract.
 */
import type { PointerOptions } from '@hostadm/shared/api/moused.ts';

export type { PointerOptions };

export interface PointerDevice {
  device: string;
  description: string;
  driver: string;
  parent: string;
  /** A mouse daemon serves it now. */
  active: boolean;
}

export interface MousedPort {
  listDevices(): Promise<PointerDevice[]>;
  /** The options the device's daemon starts with. */
  readOptions(device: string): Promise<PointerOptions>;
  /** Stores a complete option set where the device's daemon reads it at its next start. */
  writeOptions(device: string, options: PointerOptions): Promise<void>;
  /** Starts the device's daemon; one already running counts as started. */
  start(device: string): Promise<void>;
  /** Stops the device's daemon; one not running counts as stopped. */
  stop(device: string): Promise<void>;
  restart(device: string): Promise<void>;
}
