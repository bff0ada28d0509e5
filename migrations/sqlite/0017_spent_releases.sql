-- A release frees one change, once. When a gateway that served a released
-- outcome adopts something else (a good file, or a 4xx), the release is
-- spent: the same bytes arriving again later are a new change (the same
-- broken build deployed twice, a rollback of a rollback), held again as a
-- new episode with a new alert. `spent_at` says when; a spent release no
-- longer lets the outcome through.
ALTER TABLE gate_holds ADD COLUMN spent_at BIGINT;
