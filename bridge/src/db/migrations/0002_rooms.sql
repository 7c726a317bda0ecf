CREATE TABLE `bridge_sessions` (
	`connection_id` text PRIMARY KEY NOT NULL,
	`scope` text DEFAULT '' NOT NULL,
	`key_id` text NOT NULL,
	`object` text NOT NULL,
	`opened_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `bridge_sessions_key` ON `bridge_sessions` (`scope`,`key_id`);--> statement-breakpoint
CREATE TABLE `host_index` (
	`scope` text DEFAULT '' NOT NULL,
	`entry` text NOT NULL,
	`key_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`room` text NOT NULL,
	`nickname` text NOT NULL,
	`hostname` text NOT NULL,
	`fingerprint` text,
	`online_since` integer NOT NULL,
	PRIMARY KEY(`scope`, `entry`, `key_id`)
);
--> statement-breakpoint
CREATE INDEX `host_index_key` ON `host_index` (`scope`,`key_id`);--> statement-breakpoint
CREATE TABLE `object_metrics` (
	`object` text PRIMARY KEY NOT NULL,
	`scope` text DEFAULT '' NOT NULL,
	`counters` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `object_metrics_scope` ON `object_metrics` (`scope`);