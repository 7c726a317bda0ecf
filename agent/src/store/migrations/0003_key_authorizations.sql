CREATE TABLE `key_authorizations` (
	`md5_key` text PRIMARY KEY NOT NULL,
	`user` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
