-- The available bytes as the sources report them (Ceph's avail is not always total − used; the
-- inventory's LVM free space is after the spare). Rows written before this column read as
-- total − used.
ALTER TABLE usage_samples ADD COLUMN available_bytes bigint;
