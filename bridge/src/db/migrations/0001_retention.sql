CREATE INDEX `auth_failures_at` ON `auth_failures` (`at`);--> statement-breakpoint
CREATE INDEX `blacklist_until` ON `blacklist` (`until`);