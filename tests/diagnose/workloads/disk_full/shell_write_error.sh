# A shell step whose output goes to a full disk.
echo "writing shard index"
echo "shard-0001" > /dev/full || { echo "index write failed" >&2; exit 1; }
