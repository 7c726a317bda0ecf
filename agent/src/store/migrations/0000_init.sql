CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`user` text NOT NULL,
	`address` text NOT NULL,
	`transport` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`action` text NOT NULL,
	`code` integer NOT NULL,
	`detail` text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_log_at` ON `audit_log` (`at`);--> statement-breakpoint
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
CREATE TABLE `ssl_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user` text NOT NULL,
	`pub_key` text NOT NULL,
	`md5_key` text NOT NULL,
	`spki_pem` text NOT NULL,
	`algorithm` text NOT NULL,
	`nickname` text DEFAULT '' NOT NULL,
	`email` text DEFAULT '' NOT NULL,
	`registered_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ssl_keys_user_key` ON `ssl_keys` (`user`,`pub_key`);--> statement-breakpoint
CREATE INDEX `ssl_keys_md5` ON `ssl_keys` (`md5_key`);