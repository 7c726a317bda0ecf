CREATE TABLE `auth_failures` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`address` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `auth_failures_address_at` ON `auth_failures` (`address`,`at`);--> statement-breakpoint
CREATE TABLE `blacklist` (
	`address` text PRIMARY KEY NOT NULL,
	`until` integer NOT NULL,
	`reason` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `bridge_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`md5_key` text NOT NULL,
	`spki_pem` text NOT NULL,
	`algorithm` text NOT NULL,
	`kind` text NOT NULL,
	`nickname` text DEFAULT '' NOT NULL,
	`created_by` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bridge_keys_md5` ON `bridge_keys` (`md5_key`);--> statement-breakpoint
CREATE INDEX `bridge_keys_revoked_at` ON `bridge_keys` (`revoked_at`);--> statement-breakpoint
CREATE TABLE `used_join_tokens` (
	`jti` text PRIMARY KEY NOT NULL,
	`used_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`key_id` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `used_join_tokens_expires_at` ON `used_join_tokens` (`expires_at`);