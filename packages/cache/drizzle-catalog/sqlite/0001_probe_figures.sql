CREATE TABLE `fleet_probe_figures` (
	`key` text PRIMARY KEY NOT NULL,
	`identity` text NOT NULL,
	`scratch_bytes` integer NOT NULL,
	`weight_bytes` integer NOT NULL,
	`measured_at` integer NOT NULL
);
