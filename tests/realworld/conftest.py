"""The case folders are recorded trees (sysfs symlinks, some looping back up): pytest must not walk them."""

collect_ignore = ["cases"]
