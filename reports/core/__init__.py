"""The reports' pure core: rolling raw history up into hours, with no Django and no clock."""
