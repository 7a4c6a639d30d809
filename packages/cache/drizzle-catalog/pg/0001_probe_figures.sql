CREATE TABLE "fleet_probe_figures" (
	"key" text PRIMARY KEY NOT NULL,
	"identity" text NOT NULL,
	"scratch_bytes" bigint NOT NULL,
	"weight_bytes" bigint NOT NULL,
	"measured_at" bigint NOT NULL
);
