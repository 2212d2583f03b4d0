"""The accounting limits' pure core: options, reasons, the policy and its enforcement,
usage and its decay, multifactor priority and the scheduler plugin. No Django, no clock."""
