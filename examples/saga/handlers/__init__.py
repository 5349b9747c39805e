"""Lambda task handlers of the order saga and the fake payment provider they call."""
