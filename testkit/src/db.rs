//! Databases for the integration tests: a SQLite file, or a fresh
//! PostgreSQL database on the server `scripts/services.sh` started, and
//! one-off queries to check what a daemon wrote.

use std::path::Path;

use sqlx::Row;

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// The `database:` value for a fresh database of kind `db`: a SQLite file
/// in `dir`, or a new PostgreSQL database on the server scripts/services.sh
/// started. On CI a missing server fails the test instead of skipping it.
pub fn fresh_database(db: Db, dir: &Path) -> Option<String> {
    match db {
        Db::Sqlite => Some(dir.join("history.db").display().to_string()),
        Db::Postgres => {
            let Ok(base) = std::env::var("ROBOTSGATE_TEST_POSTGRES_URL") else {
                assert!(std::env::var_os("CI").is_none(), "CI must run PostgreSQL tests: run scripts/services.sh");
                eprintln!("ROBOTSGATE_TEST_POSTGRES_URL not set; skipping the PostgreSQL run");
                return None;
            };
            let name =
                format!("t{}_{}", std::process::id(), dir.file_name().unwrap().to_string_lossy().replace('-', "_"));
            let name = name.chars().rev().take(40).collect::<String>().chars().rev().collect::<String>();
            // Unquoted SQL names fold to lower case; the URL must match.
            let name =
                format!("rg_{}", name.trim_start_matches(|c: char| !c.is_ascii_alphabetic())).to_ascii_lowercase();
            block_on(async {
                sqlx::any::install_default_drivers();
                let pool = sqlx::AnyPool::connect(&base).await.expect("connect to test PostgreSQL");
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&pool)
                    .await
                    .expect("create test database");
            });
            let (prefix, _) = base.rsplit_once('/').expect("database URL has a path");
            Some(format!("{prefix}/{name}"))
        }
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
}

/// One query's single integer, straight from the database; -1 while the
/// daemon has not created it yet (no SQLite file, or no such table or
/// column: its migrations run one by one, and a test may look in between).
pub fn scalar(database: &str, sql: &str) -> i64 {
    if !database.starts_with("postgres") && !Path::new(database).exists() {
        return -1;
    }
    let url = if database.starts_with("postgres") { database.to_string() } else { format!("sqlite://{database}") };
    block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
        match sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch_one(&pool).await {
            Ok(row) => row.try_get::<i64, _>(0).expect("integer"),
            // 42P01 and 42703: undefined table and column, before the
            // daemon's migrations ran.
            Err(sqlx::Error::Database(e)) if matches!(e.code().as_deref(), Some("42P01" | "42703")) => -1,
            Err(e) if e.to_string().contains("no such table") || e.to_string().contains("no such column") => -1,
            Err(e) => panic!("{sql}: {e}"),
        }
    })
}

/// The first column of the first row, as text (NULL as an empty string).
pub fn scalar_text(database: &str, sql: &str) -> String {
    first_value(database, sql, |row| row.try_get::<Option<String>, _>(0).expect("text").unwrap_or_default())
}

fn first_value<T>(database: &str, sql: &str, get: impl FnOnce(&sqlx::any::AnyRow) -> T) -> T {
    let url = if database.starts_with("postgres") { database.to_string() } else { format!("sqlite://{database}") };
    block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch_one(&pool).await.expect(sql);
        get(&row)
    })
}
