"""``kur init``: profile a user's files and propose a working job folder with its evidence."""
