CREATE TABLE "fleet_compiles" (
	"token" text PRIMARY KEY NOT NULL,
	"key" text NOT NULL,
	"holder" text NOT NULL,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"compile_ms" double precision
);
--> statement-breakpoint
CREATE TABLE "fleet_leases" (
	"key" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"token" text NOT NULL,
	"acquired_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "fleet_programs" (
	"key" text PRIMARY KEY NOT NULL,
	"partition" text NOT NULL,
	"entry" text NOT NULL,
	"blob" text NOT NULL,
	"blob_sha256" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"compile_ms" double precision,
	"created_at" bigint NOT NULL,
	"created_by" text NOT NULL
);
