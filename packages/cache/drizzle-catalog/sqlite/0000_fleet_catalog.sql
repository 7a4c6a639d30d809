CREATE TABLE `fleet_compiles` (
	`token` text PRIMARY KEY NOT NULL,
	`key` text NOT NULL,
	`holder` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`compile_ms` real
);
--> statement-breakpoint
CREATE TABLE `fleet_leases` (
	`key` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`token` text NOT NULL,
	`acquired_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `fleet_programs` (
	`key` text PRIMARY KEY NOT NULL,
	`partition` text NOT NULL,
	`entry` text NOT NULL,
	`blob` text NOT NULL,
	`blob_sha256` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`compile_ms` real,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL
);
