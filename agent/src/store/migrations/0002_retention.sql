CREATE TABLE `audit_summary` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`hour` integer NOT NULL,
	`user` text NOT NULL,
	`address` text NOT NULL,
	`transport` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`action` text NOT NULL,
	`calls` integer NOT NULL,
	`last_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_summary_bucket` ON `audit_summary` (`hour`,`user`,`address`,`transport`,`namespace`,`name`,`action`);--> statement-breakpoint
ALTER TABLE `jobs` ADD `log_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `jobs` SET `log_bytes` = length(CAST(`log` AS BLOB));