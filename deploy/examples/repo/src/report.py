def total(invoices):
    return sum(i["amount"] for i in invoices)
