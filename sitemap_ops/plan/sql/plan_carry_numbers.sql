-- Plan 3, a delta build (sitemap_ops.plan.carry.copy_live_part): the numbers placement gives each row of one part of
-- the live build's assignment (the view `carry_part`), in order, which the part is copied by when they are
-- placement's numbers of the same rows now.
SELECT shard_key, shard, pos, bytes FROM carry_part
