package analytics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The chainable setters write the keys segmentio/analytics-go v3 writes, so
// that code ported from it sends the same properties and traits; the one
// deliberate exception is Integrations' "All" (v3: "all").
func TestSettersWriteV3Keys(t *testing.T) {
	day := time.Date(1990, 1, 2, 0, 0, 0, 0, time.UTC)
	props := NewProperties().SetRevenue(1).SetCurrency("EUR").SetValue(2).SetPath("/p").
		SetReferrer("r").SetTitle("T").SetURL("u").SetName("n").SetCategory("c").SetSKU("s").
		SetPrice(3).SetProductId("p1").SetOrderId("o1").SetTotal(4).SetSubtotal(5).SetShipping(6).
		SetTax(7).SetDiscount(8).SetCoupon("C").SetProducts(Product{ID: "p1"}).SetRepeat(true)
	assert.Equal(t, Properties{
		"revenue": 1.0, "currency": "EUR", "value": 2.0, "path": "/p", "referrer": "r",
		"title": "T", "url": "u", "name": "n", "category": "c", "sku": "s", "price": 3.0,
		"id": "p1", "orderId": "o1", "total": 4.0, "subtotal": 5.0, "shipping": 6.0,
		"tax": 7.0, "discount": 8.0, "coupon": "C", "products": []Product{{ID: "p1"}}, "repeat": true,
	}, props)

	traits := NewTraits().SetAddress("a").SetAge(30).SetAvatar("av").SetBirthday(day).
		SetCreatedAt(day).SetDescription("d").SetEmail("e").SetFirstName("f").SetGender("g").
		SetLastName("l").SetName("n").SetPhone("p").SetTitle("t").SetUsername("u").SetWebsite("w")
	assert.Equal(t, Traits{
		"address": "a", "age": 30, "avatar": "av", "birthday": day, "createdAt": day,
		"description": "d", "email": "e", "firstName": "f", "gender": "g", "lastName": "l",
		"name": "n", "phone": "p", "title": "t", "username": "u", "website": "w",
	}, traits)

	assert.Equal(t, Integrations{"All": false, "Mixpanel": true, "Salesforce": false, "x": "y"},
		NewIntegrations().EnableAll().DisableAll().Enable("Mixpanel").Disable("Salesforce").Set("x", "y"))
}
