CREATE TABLE `cache_bundles` (
	`dir` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `cache_entries` (
	`path` text PRIMARY KEY NOT NULL,
	`bundle_dir` text NOT NULL,
	`bundle` text NOT NULL,
	`partition` text NOT NULL,
	`entry` text NOT NULL,
	`module_file` text,
	`module_sha256` text NOT NULL,
	`options_hash` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`compile_ms` real,
	`load_ms` real,
	`created_at` integer NOT NULL,
	`last_hit_at` integer,
	`hit_count` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `cache_entries_bundle_dir` ON `cache_entries` (`bundle_dir`);--> statement-breakpoint
CREATE INDEX `cache_entries_last_hit` ON `cache_entries` (`last_hit_at`);