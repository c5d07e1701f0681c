/**
 * Migration ledgers: the tables knex records applied migrations in, one per migration set.
 *
 * The release of spec/released/COMMIT when rolling upgrades began (6bf6f74) checks at start that
 * every name in its ledger `knex_migrations` is a migration it has, and refuses to start otherwise
 * ("The migration directory is corrupt"). So that a node of that release can still start (or
 * restart) on a database a later release migrated, while both serve during a rolling upgrade, that
 * ledger holds only that release's migrations: every later relational migration is recorded in
 * `knex_migrations_2`, which that release never reads. A database whose `knex_migrations` already
 * holds later ones (migrated before this split) has them moved over at the next migrate
 * (src/infra/db/migrate.ts). Releases since then read a name they do not know as a newer
 * release's and serve, so no further ledger is needed for them.
 */
import type { MigrationSet } from './migrate';

/** The relational migrations of release 6bf6f74: exactly what its `knex_migrations` may hold. */
export const FIRST_LEDGER_MIGRATIONS: ReadonlySet<string> = new Set([
  '20261121120000_create_feature_flags',
  '20261122100000_create_users_and_accounts',
  '20261122100100_create_sessions_and_credentials',
  '20261122100101_create_credentials',
  '20261122100200_create_notifications',
  '20261122100300_create_audit_log',
  '20261123080000_plans_plan_features_and_overrides',
  '20261123080500_create_events',
  '20261123081000_create_overlays_and_widgets',
  '20261123081000_user_settings_and_account_limit',
  '20261123082000_create_setting_presets',
  '20261123083000_create_account_connections',
  '20261123083100_create_platform_switches',
  '20261123083200_create_login_connections_and_assignments',
  '20261123100000_account_retention_override',
  '20261123101301_chat_messages',
  '20261123101302_chat_moderation_log',
  '20261123101303_chat_platform_users',
  '20261123101410_developer_portal',
  '20261123102000_sounds_blob_chunks',
  '20261123102100_sounds_create_sounds',
  '20261123102200_sounds_extension_limits',
  '20261123104500_webhooks_receipts_shops_billing',
  '20261123105117_extensions_create_tables',
  '20261123105815_ideas_board',
  '20261123105931_stats_create_tables',
  '20261124100000_create_event_counts',
  '20261124120000_create_access_version',
  '20261125150000_create_worker_leases',
  '20261125153000_add_login_connection_grants',
  '20261125153100_create_login_codes_and_signin_flows',
  '20261125154000_add_account_connection_grants',
  '20261125183000_overlay_and_widget_settings',
  '20261125190000_create_mail_outbox',
  '20261125190000_stats_ingest_batches',
]);

/** The ledger of every relational migration after FIRST_LEDGER_MIGRATIONS. */
export const SECOND_LEDGER_TABLE = 'knex_migrations_2';

/**
 * The relational set as two ledgers: the first release's migrations in its own table, the rest in
 * SECOND_LEDGER_TABLE (found in the first table on a database migrated before the split).
 */
export function splitRelationalLedger(set: MigrationSet): MigrationSet[] {
  return [
    { table: set.table, migrations: set.migrations.filter((m) => FIRST_LEDGER_MIGRATIONS.has(m.name)) },
    { table: SECOND_LEDGER_TABLE, migrations: set.migrations.filter((m) => !FIRST_LEDGER_MIGRATIONS.has(m.name)), movedFrom: set.table },
  ];
}
