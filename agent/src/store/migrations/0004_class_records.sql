CREATE TABLE `class_records` (
	`owner` text NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `class_records_key` ON `class_records` (`owner`,`kind`,`key`);