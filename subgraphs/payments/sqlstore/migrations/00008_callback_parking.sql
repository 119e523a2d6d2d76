-- +goose Up
-- The pending events of a client whose callbacks are off are parked. The
-- sender's claim, every second, searches unparked events only: a backlog
-- waiting for an operator to turn callbacks on again no longer costs it a
-- walk (under SQLite's write lock) each time. Parking and unparking a client
-- search its pending events alone.
ALTER TABLE callback_events ADD COLUMN parked INTEGER NOT NULL DEFAULT 0;
UPDATE callback_events SET parked = 1 WHERE state = 'pending'
    AND client_id IN (SELECT id FROM service_clients WHERE callbacks_disabled_at IS NOT NULL);
DROP INDEX callback_events_due;
CREATE INDEX callback_events_due ON callback_events (state, parked, next_attempt_at);
CREATE INDEX callback_events_client_pending ON callback_events (client_id) WHERE state = 'pending';

-- +goose Down
DROP INDEX callback_events_client_pending;
DROP INDEX callback_events_due;
CREATE INDEX callback_events_due ON callback_events (state, next_attempt_at);
ALTER TABLE callback_events DROP COLUMN parked;
