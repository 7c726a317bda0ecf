CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`type` text NOT NULL,
	`params` text NOT NULL,
	`commands` text NOT NULL,
	`owner` text NOT NULL,
	`state` text NOT NULL,
	`seq` integer NOT NULL,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`success` integer,
	`return_codes` text DEFAULT '{}' NOT NULL,
	`log` text DEFAULT '' NOT NULL,
	`log_truncated` integer DEFAULT false NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`acknowledged` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_state_queue_seq` ON `jobs` (`state`,`queue`,`seq`);